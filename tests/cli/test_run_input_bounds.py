"""Issue 21: ``hetero-train run`` reads ``--input @FILE`` only from a regular file, bounded,
and refuses an execution name Step Functions would refuse, a local run's too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hetero_constructs.cli import main
from hetero_constructs.cli.inputs import MAX_INPUT_BYTES, read_input
from hetero_constructs.cli.output import CliError


def test_a_regular_input_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "input.json"
    path.write_text('{"hyperparameters": {"epochs": 2}}')
    assert read_input(f"@{path}") == {"hyperparameters": {"epochs": 2}}


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    with pytest.raises(CliError, match="not a regular file"):
        read_input(f"@{fifo}")


def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "input.json"
    link.symlink_to("/dev/urandom")
    with pytest.raises(CliError, match="not a regular file"):
        read_input(f"@{link}")


def test_a_file_over_step_functions_input_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "input.json"
    path.write_text('{"a": "' + "x" * MAX_INPUT_BYTES + '"}')
    with pytest.raises(CliError, match="more than 262,144 bytes"):
        read_input(f"@{path}")


def test_a_local_run_refuses_an_81_character_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--local", str(tmp_path / "missing.template.json"), "--name", "n" * 81])
    assert code != 0
    assert "81 characters" in capsys.readouterr().err
