"""The training tasks of a state machine's definition, and an execution input checked for them
as the submit Lambda will check it.

The state machine's definition carries what the submit Lambda gets: its task's payload holds
the synthesized ``spec`` (and ``deployment``, ``jobNamePrefix``). The input is checked with the
core's own functions (``apply_overrides``, ``read_spec``, ``plan``) in the order the Lambda's
``prepare`` uses them, so a run that would fail at submission is never started.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hetero_constructs.contract.naming import preview_job_name
from hetero_constructs.contract.overrides import apply_overrides
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.violations import Violation

_DEPLOYMENT_FIELDS = frozenset(f.name for f in dataclasses.fields(Deployment)) - {"job_name"}


#: Where a task's overrides come from, as a path into the execution input: ``()`` is the input
#: itself; None: from a value no path in the execution input names (a static object, an
#: expression).
OverridesPath = tuple[str, ...] | None

_JSONPATH = re.compile(r"^\$(?:\.[A-Za-z_][A-Za-z0-9_-]*)*$")
_JSONATA = re.compile(r"^\{%\s*\$states\.input((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*%\}$")


@dataclass(frozen=True)
class SubmitTask:
    """A state of the definition that submits a training job, and its payload.

    ``overrides_path``: where in its state's input the task reads its overrides (``()``: the
    whole input; None: no path). ``first``: the task is the definition's first state, so its
    state input is the execution input.
    """

    state_name: str
    payload: Mapping[str, Any]
    overrides_path: OverridesPath = ()
    first: bool = True

    @property
    def takes_execution_input(self) -> bool:
        """The task's overrides are the execution input itself."""
        return self.first and self.overrides_path == ()

    @property
    def path_text(self) -> str:
        return "$" + "".join(f".{part}" for part in self.overrides_path or ())

    def overrides_in(self, execution_input: Any) -> tuple[bool, Any]:
        """(found, value): the value at ``overrides_path`` in ``execution_input``."""
        if self.overrides_path is None:
            return False, None
        node = execution_input
        for part in self.overrides_path:
            if not isinstance(node, Mapping) or part not in node:
                return False, None
            node = node[part]
        return True, node


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


def _json_path(text: Any) -> OverridesPath:
    if not isinstance(text, str) or not _JSONPATH.match(text):
        return None
    return tuple(part for part in text[1:].split(".") if part)


def _overrides_path(state: Mapping[str, Any], payload: Mapping[str, Any]) -> OverridesPath:
    """Where in the state's input the payload's ``input`` comes from (InputPath included)."""
    if "input.$" in payload:
        inner = _json_path(payload["input.$"])
    elif isinstance(payload.get("input"), str) and (found := _JSONATA.match(payload["input"])):
        inner = tuple(part for part in found.group(1).split(".") if part)
    else:
        return None  # no overrides, or a static object
    outer = _json_path(state.get("InputPath", "$"))
    if inner is None or outer is None:
        return None
    return outer + inner


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
                found.append(
                    SubmitTask(name, payload, _overrides_path(state, payload), state is first)
                )
    return found


@dataclass(frozen=True)
class OverridesToCheck:
    """What of an execution input a task's overrides will be: ``checked`` with ``value``, or
    not (``note`` says why, in one line)."""

    task: SubmitTask
    checked: bool
    value: Any = None
    note: str | None = None


def overrides_to_check(tasks: list[SubmitTask], execution_input: Any) -> list[OverridesToCheck]:
    """For each task, the part of ``execution_input`` its overrides will be, where it is known
    before the run starts."""
    result = []
    for task in tasks:
        name = task.state_name
        if task.takes_execution_input:
            result.append(OverridesToCheck(task, True, execution_input))
            continue
        if task.overrides_path is None:
            result.append(
                OverridesToCheck(
                    task,
                    False,
                    note=f"The training task {name!r} takes no overrides from the execution input.",
                )
            )
            continue
        found, value = task.overrides_in(execution_input)
        # Past the first state, the state input is what earlier states made of the execution
        # input: only a value at a path of its own is the input's.
        found = found and (task.first or bool(task.overrides_path))
        where = task.path_text
        note: str | None
        if task.first:
            note = (
                None
                if found
                else f"The training task {name!r} reads its overrides from {where}, which the "
                "execution input does not hold: the task will fail (States.Runtime)."
            )
        elif found:
            note = (
                f"The training task {name!r} reads its overrides from {where}, which earlier "
                "states produce: the value the input holds there was checked."
            )
        else:
            note = (
                f"The training task {name!r} reads its overrides from {where}, which earlier "
                "states produce: the execution input is not checked as overrides (the submit "
                "Lambda checks them when the task runs)."
            )
        result.append(OverridesToCheck(task, found, value if found else None, note))
    return result


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
    "OverridesPath",
    "OverridesToCheck",
    "SubmitTask",
    "check_input",
    "find_submit_tasks",
    "overrides_to_check",
]
