"""The execution input, read from ``--input`` (``runs.training_run.check_run_input`` checks it
as each training task will see it)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from hetero_constructs.cli.output import CliError

# Step Functions' limit on an execution's input (StartExecution, 256 KiB).
MAX_INPUT_BYTES = 262_144


def read_input(text: str | None) -> Any:
    """``--input``: JSON text, or ``@file`` holding JSON; ``{}`` when not given."""
    if text is None:
        return {}
    source = "--input"
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            text = _read_input_file(path)
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


def _read_input_file(path: Path) -> str:
    """A regular file of at most ``MAX_INPUT_BYTES``, read without blocking (a FIFO, a device
    or a link to one is refused before anything is read)."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as stream:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path} is not a regular file; give the input file itself")
        data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise OSError(f"the file holds more than {MAX_INPUT_BYTES:,} bytes, Step Functions' limit")
    return data.decode("utf-8")


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


__all__ = [
    "read_input",
]
