"""Violations at ``cdk synth``: reported as the list they are, without a traceback.

A spec that breaks a rule raises ``SpecValidationError`` where the user's app creates the
construct; a validation of the construct tree (a task in no state machine) fails in
aws-cdk-lib's ``app.synth()`` through jsii. Either way the user has code to fix, not a bug
to debug: the 20 lines of Python and jsii frames before the violations only hide them. The
constructs therefore install a ``sys.excepthook`` that prints such an error's message alone
(the exit status stays 1) and hands every other exception to the hook it replaced.
``HETERO_CONSTRUCTS_TRACEBACK=1`` shows the full traceback again.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import TracebackType

from jsii.errors import JavaScriptError

from hetero_constructs.spec.violations import SpecValidationError

TRACEBACK_VARIABLE = "HETERO_CONSTRUCTS_TRACEBACK"
# How aws-cdk-lib's synth reports failed construct validations, and failed policy validation
# plugins (cdk-nag's Validations packs) whose report it has printed already.
_CDK_VALIDATIONS = ("ValidationFailedWithErrors: ", "ValidationFailed: ")
_INSTALLED = "_hetero_constructs_report"

ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def report_text(error: BaseException) -> str | None:
    """What to print for an error the user fixes in their app; None for any other error."""
    if isinstance(error, SpecValidationError):
        return str(error)
    if isinstance(error, RuntimeError) and isinstance(error.__cause__, JavaScriptError):
        message = str(error)
        for prefix in _CDK_VALIDATIONS:
            if message.startswith(prefix):
                return message.removeprefix(prefix)
    return None


def _reporting(previous: ExceptHook) -> ExceptHook:
    def report(
        kind: type[BaseException], error: BaseException, traceback: TracebackType | None
    ) -> None:
        text = None if os.environ.get(TRACEBACK_VARIABLE) else report_text(error)
        if text is None:
            previous(kind, error, traceback)
            return
        sys.stderr.write(f"{text}\n({TRACEBACK_VARIABLE}=1 shows the traceback)\n")
        sys.stderr.flush()

    setattr(report, _INSTALLED, True)
    return report


def report_violations_without_traceback() -> None:
    """Install the hook once (importing the constructs does)."""
    if not getattr(sys.excepthook, _INSTALLED, False):
        sys.excepthook = _reporting(sys.excepthook)


__all__ = [
    "TRACEBACK_VARIABLE",
    "report_text",
    "report_violations_without_traceback",
]
