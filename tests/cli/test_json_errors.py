"""``--json`` mode: an error is one JSON object on standard error, with its name; the exit codes
stay as documented (1 failure, 2 usage)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from hetero_constructs.cli import main
from tests.fixtures.fake_stack import FakeStack


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


def error_of(err: str) -> dict[str, Any]:
    [line] = err.splitlines()  # one line, nothing else
    record: dict[str, Any] = json.loads(line)
    return record


def test_a_run_that_does_not_exist(stack: FakeStack, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = cli("status", "no-such-run", "--json")
    assert (code, out) == (2, "")  # a name that matches nothing: a usage error
    error = error_of(capsys.readouterr().err)
    assert error["error"] == "NotFound" and "no-such-run" in error["message"]
    code, out = cli("status", stack.execution_arn("missing"), "--json")
    assert (code, out) == (2, "")  # an ARN too, never the service's error
    assert error_of(capsys.readouterr().err)["error"] == "NotFound"


def test_an_aws_error_is_named_by_its_code(
    stack: FakeStack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hetero_constructs.runs import targets

    # Found by name, gone when it is read: the service's own error.
    monkeypatch.setattr(targets, "resolve_execution", lambda run, **_: run)
    arn = stack.execution_arn("missing")
    code, _ = cli("status", arn, "--json")
    assert code == 1
    error = error_of(capsys.readouterr().err)
    assert error["error"] == "ExecutionDoesNotExist"
    assert error["operation"] == "DescribeExecution"


def test_a_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = cli("run", "x", "--json", "--no-such-option")
    assert code == 2
    error = error_of(capsys.readouterr().err)
    assert error["error"] == "NoSuchOption" and "--no-such-option" in error["message"]


def test_without_json_errors_stay_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = cli("run", "x", "--no-such-option")
    assert code == 2
    assert "No such option" in capsys.readouterr().err
