"""Where ``hetero-train`` writes: rich on a terminal, plain text in a pipe, JSON on request."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from rich import box
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from hetero_constructs.runs.execution import seconds_between
from hetero_constructs.spec.violations import Violation, render_value

# Plain output is for pipes and files: no line is ever wrapped by the renderer.
_PLAIN_WIDTH = 100_000


class CliError(Exception):
    """A problem the user can fix; printed without a traceback (exit 1).

    The message says what went wrong, the value given, what is allowed and the fix. ``name``
    is the error's name in ``--json`` mode (``{"error": name, "message": ...}``).
    """

    def __init__(self, message: str, name: str = "InvalidArgument", exit_code: int = 1) -> None:
        super().__init__(message)
        self.name = name
        #: 1 for a problem with what was asked; 2 for a name that matches nothing (usage).
        self.exit_code = exit_code


def error_record(name: str, message: str, **extra: Any) -> str:
    """An error as ``--json`` mode writes it on standard error: one JSON object, one line."""
    return json.dumps({"error": name, "message": message, **extra}, default=json_default)


def make_console(file: TextIO, *, terminal: bool | None = None) -> Console:
    """A rich console: colours and live displays on a terminal, plain text elsewhere.

    A character ``file``'s encoding lacks (a log line's progress bar in a Windows pipe, which is
    cp1252) is written as a backslash escape instead of failing mid-output.
    """
    if isinstance(file, io.TextIOWrapper) and file.errors == "strict":
        file.reconfigure(errors="backslashreplace")
    is_terminal = file.isatty() if terminal is None else terminal
    if is_terminal:
        return Console(file=file, force_terminal=True, highlight=False)
    return Console(
        file=file,
        force_terminal=False,
        no_color=True,
        highlight=False,
        width=_PLAIN_WIDTH,
        soft_wrap=True,
    )


@dataclass
class Output:
    """The command's standard output and error, and whether JSON was asked for."""

    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    json: bool = False

    def __post_init__(self) -> None:
        self.console = make_console(self.stdout)
        self.errors = make_console(self.stderr)

    @property
    def is_terminal(self) -> bool:
        return self.console.is_terminal

    def emit_json(self, data: Any) -> None:
        """One JSON document (indented) on standard output."""
        self.stdout.write(json.dumps(data, indent=2, default=json_default) + "\n")
        self.stdout.flush()

    def emit_json_line(self, data: Any) -> None:
        """One JSON Lines record on standard output (streams: follow, logs)."""
        self.stdout.write(json.dumps(data, default=json_default) + "\n")
        self.stdout.flush()

    def note(self, text: str) -> None:
        """A remark for the person at the terminal (standard error, so pipes stay clean)."""
        self.errors.print(
            f"[dim]note:[/dim] {escape(text)}"
            if self.errors.is_terminal
            else f"note: {escape(text)}"
        )

    def show(self, renderable: RenderableType) -> None:
        """Print on standard output; in plain mode without the padding rich adds to lines."""
        print_renderable(self.console, renderable)

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
        """A table: ruled and coloured on a terminal, aligned plain columns elsewhere."""
        table = Table(
            *columns,
            box=box.SIMPLE_HEAD if self.is_terminal else None,
            header_style="bold" if self.is_terminal else "",
            show_edge=False,
            pad_edge=False,
        )
        for row in rows:
            # Cells are text as given (a failure reason's "[rank0]" or "[/opt/...]" is no markup).
            table.add_row(*(Text(cell) for cell in row))
        return table


def print_renderable(console: Console, renderable: RenderableType) -> None:
    """``console.print``; in plain mode each line loses the trailing spaces of table cells."""
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as captured:
        console.print(renderable)
    text = "\n".join(line.rstrip() for line in captured.get().splitlines())
    console.file.write(text + "\n")
    console.file.flush()


def json_default(value: Any) -> Any:
    """datetimes as ISO 8601; anything else as its string."""
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def print_violations(violations: Sequence[Violation], source: str, out: TextIO) -> None:
    """Every violation: severity, rule id, path, problem, value given, what is allowed, the fix.

    A warning's fix is followed by the ``acknowledgments:`` entry that silences it.
    """
    noun = "violation" if len(violations) == 1 else "violations"
    warnings = sum(1 for v in violations if v.severity == "warning")
    tally = f" ({len(violations) - warnings} error(s), {warnings} warning(s))" if warnings else ""
    out.write(f"{len(violations)} {noun} in {source}{tally}:\n")
    for v in violations:
        out.write(f"\n  {v.severity} [{v.rule}] {v.path or '(spec)'}\n")
        out.write(f"    {v.problem}\n")
        out.write(f"    given:   {render_value(v.value)}\n")
        out.write(f"    allowed: {v.allowed}\n")
        out.write(f"    fix:     {v.fix}\n")
        if v.acknowledgment is not None:
            out.write("    or, if it does not apply, acknowledge it in the spec:\n")
            out.write(f"             {v.acknowledgment}\n")


def duration_text(seconds: float | None) -> str:
    """``1h02m03s``, ``2m03s`` or ``3s``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def clock_text(moment: datetime | None) -> str:
    """``HH:MM:SS`` in UTC, the time of day of an event."""
    if moment is None:
        return "--:--:--"
    return _utc(moment).strftime("%H:%M:%S")


def date_text(moment: datetime | None) -> str:
    """``YYYY-MM-DD HH:MM:SS UTC``; ``-`` when unknown."""
    if moment is None:
        return "-"
    return _utc(moment).strftime("%Y-%m-%d %H:%M:%S UTC")


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


__all__ = [
    "CliError",
    "Output",
    "clock_text",
    "date_text",
    "duration_text",
    "error_record",
    "json_default",
    "make_console",
    "print_renderable",
    "print_violations",
    "seconds_between",
]
