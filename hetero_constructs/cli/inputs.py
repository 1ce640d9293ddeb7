"""The execution input: read from ``--input``, checked locally as the submit Lambda will.

The state machine's definition carries what the submit Lambda gets: its task's payload holds
the synthesized ``spec`` (and ``deployment``, ``jobNamePrefix``). The input is
checked with the core's own functions (``apply_overrides``, ``read_spec``, ``plan``) in the
order the Lambda's ``prepare`` uses them, so a run that would fail at submission is never
started.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetero_constructs.cli.output import CliError, Output
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.run.naming import preview_job_name
from hetero_constructs.run.overrides import apply_overrides
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.violations import Violation

_DEPLOYMENT_FIELDS = frozenset(f.name for f in dataclasses.fields(Deployment)) - {"job_name"}


def read_input(text: str | None) -> Any:
    """``--input``: JSON text, or ``@file`` holding JSON; ``{}`` when not given."""
    if text is None:
        return {}
    source = "--input"
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CliError(
                f"The input file cannot be read. Given: {str(path)!r}. Allowed: a readable "
                f"UTF-8 file holding a JSON object. Fix: {error}."
            ) from None
        source = str(path)
    try:
        return json.loads(text, parse_constant=_not_json, object_pairs_hook=_no_repeated_keys)
    except _RepeatedKey as error:
        raise CliError(
            f"The execution input in {source} gives the key {error.key!r} more than once (an "
            "object's keys must be unique: only its last value would be sent). Allowed: each "
            "key once. Fix: merge the values under one key."
        ) from None
    except (ValueError, RecursionError) as error:  # RecursionError: nested beyond the parser
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise CliError(
            f"The execution input in {source} is not JSON ({error}). Given: {shown!r}. "
            'Allowed: a JSON object such as \'{"hyperparameters": {"epochs": 5}}\'. '
            "Fix: quote the JSON for the shell, or put it in a file and pass --input @file."
        ) from None


def _not_json(literal: str) -> Any:
    """``NaN``, ``Infinity``, ``-Infinity``: Python reads them, JSON has no such values."""
    raise ValueError(f"{literal} is not a JSON value")


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A key given twice would silently lose its first value when the input is sent."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return result


@dataclass(frozen=True)
class SubmitTask:
    """A state of the definition that submits a training job, and its payload.

    ``takes_execution_input``: the task's overrides are the execution input itself (the first
    state of the definition passes its whole input), so the input can be checked before the
    run starts. Otherwise they come from what earlier states produce (e.g. ``$.prepared``):
    the submit Lambda checks them when the task runs.
    """

    state_name: str
    payload: Mapping[str, Any]
    takes_execution_input: bool = True


def _states(states: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every state, nested ones too (Parallel branches, Map item processors)."""
    for name, state in states.items():
        if not isinstance(state, Mapping):
            continue
        yield name, state
        for branch in state.get("Branches", []) or []:
            if isinstance(branch, Mapping):
                yield from _states(branch.get("States", {}))
        for key in ("ItemProcessor", "Iterator"):
            inner = state.get(key)
            if isinstance(inner, Mapping):
                yield from _states(inner.get("States", {}))


def find_submit_tasks(definition: Mapping[str, Any]) -> list[SubmitTask]:
    """States whose payload has ``spec`` and ``jobNamePrefix`` (JSONPath ``Parameters`` or
    JSONata ``Arguments``)."""
    found = []
    states = definition.get("States", {})
    first = states.get(definition.get("StartAt")) if isinstance(states, Mapping) else None
    for name, state in _states(states if isinstance(states, Mapping) else {}):
        for key in ("Parameters", "Arguments"):
            block = state.get(key)
            payload = block.get("Payload") if isinstance(block, Mapping) else None
            if isinstance(payload, Mapping) and "spec" in payload and "jobNamePrefix" in payload:
                whole_input = (
                    payload.get("input.$") == "$" or payload.get("input") == "{% $states.input %}"
                )
                takes = state is first and state.get("InputPath", "$") == "$" and whole_input
                found.append(SubmitTask(name, payload, takes))
    return found


def checked_tasks(out: Output, tasks: list[SubmitTask]) -> list[SubmitTask]:
    """The tasks whose overrides are the execution input; a note for each of the others."""
    for task in tasks:
        if not task.takes_execution_input:
            out.note(
                f"The training task {task.state_name!r} takes its overrides from what earlier "
                "states produce, not from the execution input: the submit Lambda checks them "
                "when the task runs."
            )
    return [task for task in tasks if task.takes_execution_input]


@dataclass(frozen=True)
class InputCheck:
    """What the submit Lambda would do with this input: the job's name and request, or why
    it would refuse."""

    state_name: str
    job_name: str | None
    request: dict[str, Any] | None
    violations: tuple[Violation, ...]


def check_input(task: SubmitTask, execution_input: Any, execution_name: str) -> InputCheck:
    """Validate ``execution_input`` for ``task`` as the submit Lambda will."""
    payload = task.payload
    prefixes = payload.get("channelPrefixes")
    overridden = apply_overrides(
        payload["spec"],
        execution_input,
        channel_prefixes=prefixes if isinstance(prefixes, list) else None,
    )
    if overridden.violations:
        return InputCheck(task.state_name, None, None, overridden.violations)
    reading = read_spec(overridden.spec)
    if reading.spec is None:
        return InputCheck(task.state_name, None, None, reading.violations)
    prefix = payload.get("jobNamePrefix")
    name = None
    if isinstance(prefix, str):
        if overridden.job_name_prefix:
            prefix = f"{prefix}-{overridden.job_name_prefix}"
        name = preview_job_name(prefix, execution_name)
    given = payload.get("deployment")
    fields = (
        {k: v for k, v in given.items() if k in _DEPLOYMENT_FIELDS}
        if isinstance(given, Mapping)
        else {}
    )
    result = plan(reading.spec, Deployment(job_name=name, **fields))
    if result.request is not None:
        return InputCheck(task.state_name, name, result.request, ())
    return InputCheck(task.state_name, name, None, (*reading.violations, *result.violations))


__all__ = [
    "InputCheck",
    "SubmitTask",
    "check_input",
    "checked_tasks",
    "find_submit_tasks",
    "read_input",
]
