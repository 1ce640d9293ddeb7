"""What the local account replaces in moto is declared, checked at start, and put back.

A moto release that moves a target stops ``LocalCloud()`` (and ``hetero-train run --local``,
``local serve``) with one message naming the release, the target and the supported range;
nothing stays replaced, whenever the start fails.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import io
import os
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.cli import main
from hetero_constructs.local import LocalCloud, UnsupportedMoto, moto_gaps
from hetero_constructs.local import moto_targets as targets
from hetero_constructs.local.patching import Patches

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "hetero_constructs" / "local"


def _values() -> dict[str, Any]:
    """Every replaced target's value as moto holds it now (its own attribute, for a class)."""
    values = {}
    for target in targets.REPLACED:
        owner, name, value = targets.resolve(target)
        own = owner.__dict__.get(name, targets.ABSENT) if isinstance(owner, type) else value
        values[target.name] = own
    return values


@contextlib.contextmanager
def _recorded_replacements() -> Iterator[list[tuple[Any, str]]]:
    replaced: list[tuple[Any, str]] = []
    replace = Patches.replace

    def recording(patches: Patches, owner: Any, name: str, replacement: Any) -> Any:
        replaced.append((owner, name))
        return replace(patches, owner, name, replacement)

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(Patches, "replace", recording)
        yield replaced


def test_every_target_is_where_the_local_account_expects_it() -> None:
    assert targets.problems((*targets.REPLACED, *targets.USED)) == []


def test_the_replacements_are_the_declared_ones_each_made_once() -> None:
    before = _values()
    with _recorded_replacements() as replaced, LocalCloud():
        pass
    made = sorted(
        f"{owner.__module__}.{owner.__qualname__}.{name}"
        if isinstance(owner, type)
        else f"{owner.__name__}.{name}"
        for owner, name in replaced
    )
    assert made == sorted(target.name for target in targets.REPLACED)
    assert len(set(replaced)) == len(replaced)
    assert _values() == before  # all put back
    _moto_behaves_as_before()
    objects = {id(owner) for owner, _ in replaced}
    modules = {target.module for target in targets.REPLACED}
    print(
        f"\nmoto {targets.moto_version()}: the local account replaces {len(replaced)} attributes "
        f"of {len(objects)} objects in {len(modules)} moto modules"
    )


def _moto_behaves_as_before() -> None:
    """What the replacements change, back to moto's own behaviour (a class attribute put back
    can still behave otherwise: CPython keeps a class's ``__new__`` slot once it was set)."""
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
        CustomErrorName,
    )

    assert CustomErrorName("Boom").error_name == "Boom"
    with pytest.raises(ValueError, match=r"MUST NOT begin with the prefix 'States\.'"):
        CustomErrorName("States.Timeout")


def test_a_replacement_undeclared_repeated_or_unfit_for_the_call_is_refused() -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    def anything(*args: Any, **kwargs: Any) -> None:
        return None

    def positional_only(backend: Any, token: str) -> None:
        return None

    with contextlib.ExitStack() as stack:
        patches = Patches(stack)
        with pytest.raises(LookupError, match=r"not declared in moto_targets\.REPLACED"):
            patches.replace(StepFunctionsParserBackend, "describe_execution", anything)
        # moto may pass task_token by name: a replacement must take it so.
        with pytest.raises(TypeError, match=r"\(backend, token\).*\['task_token', 'outcome'\]"):
            patches.replace(StepFunctionsParserBackend, "send_task_success", positional_only)
        patches.replace(StepFunctionsParserBackend, "send_task_heartbeat", anything)
        with pytest.raises(LookupError, match="replaced twice"):
            patches.replace(StepFunctionsParserBackend, "send_task_heartbeat", anything)


def _moved(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release that renamed ``Execution.stop`` and re-signed ``send_task_heartbeat``."""
    from moto.stepfunctions.parser.backend.execution import Execution
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    monkeypatch.delattr(Execution, "stop")

    def send_task_heartbeat(self: Any, task_token: str, execution_arn: str) -> None:
        raise AssertionError("never called")

    monkeypatch.setattr(StepFunctionsParserBackend, "send_task_heartbeat", send_task_heartbeat)


def _supported() -> str:
    (text,) = [
        r for r in importlib.metadata.requires("hetero-constructs") or []
        if r.startswith("moto[") and 'extra == "local"' in r
    ]  # fmt: skip
    return text.split("]", 1)[1].split(";")[0]


def test_a_moved_target_stops_the_start_with_one_clear_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _moved(monkeypatch)
    before = _values()
    environment = dict(os.environ)
    with pytest.raises(UnsupportedMoto) as raised:
        LocalCloud()
    error = raised.value
    message = str(error)
    assert f"moto {importlib.metadata.version('moto')}" in message
    assert "moto.stepfunctions.parser.backend.execution.Execution.stop: missing" in message
    assert (
        "StepFunctionsParserBackend.send_task_heartbeat: is (self, task_token, execution_arn), "
        "the local account expects (self, task_token)"
    ) in message
    assert len(error.problems) == 2
    for bound in _supported().split(","):
        assert bound in error.supported
    assert f"Supported moto releases: {error.supported}" in message
    assert _values() == before and dict(os.environ) == environment


def test_a_target_moved_after_the_cloud_was_made_stops_its_start_and_nothing_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cloud = LocalCloud()
    before = _values()
    environment = dict(os.environ)
    _moved(monkeypatch)
    with pytest.raises(UnsupportedMoto, match=r"Execution\.stop: missing"):
        cloud.__enter__()
    monkeypatch.undo()
    assert _values() == before and dict(os.environ) == environment
    _moto_behaves_as_before()


def test_a_failure_half_way_through_the_replacements_puts_back_what_was_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _values()
    environment = dict(os.environ)

    def failing(*args: Any) -> None:
        raise RuntimeError("half-way")

    # Installed after most of the others.
    monkeypatch.setattr(moto_gaps, "redrive_execution", failing)
    with _recorded_replacements() as replaced, pytest.raises(RuntimeError, match="half-way"):
        LocalCloud().__enter__()
    assert len(replaced) > 20
    assert _values() == before and dict(os.environ) == environment
    _moto_behaves_as_before()


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv), out=out)
    return code, out.getvalue()


@pytest.mark.parametrize("command", [["run", "--local"], ["local", "serve"]])
def test_the_command_line_says_what_moved_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    command: list[str],
) -> None:
    template = tmp_path / "Stack.template.json"
    template.write_text('{"Resources": {}}')
    _moved(monkeypatch)
    before = _values()
    code, out = _cli(*command, str(template))
    err = capsys.readouterr().err
    assert code == 1 and out == ""
    assert err.startswith("error: the local account cannot start on moto "), err
    assert "Execution.stop: missing" in err and "Supported moto releases: " in err
    assert "Traceback" not in err
    assert _values() == before


def test_every_moto_import_of_the_local_account_is_declared() -> None:
    declared = {(t.module, t.path.split(".")[0]) for t in (*targets.REPLACED, *targets.USED)}
    undeclared = []
    for path in sorted(LOCAL.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("moto"):
                for alias in node.names:
                    if (node.module, alias.name) not in declared:
                        undeclared.append(f"{path.name}: from {node.module} import {alias.name}")
    assert undeclared == [], "declare these in moto_targets.USED: " + "; ".join(undeclared)
