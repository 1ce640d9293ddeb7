"""The one exception the runtime helper raises for unusable configuration."""

from __future__ import annotations


class TrainingEnvironmentError(ValueError):
    """A SageMaker configuration file (or dict) is missing, unreadable or malformed.

    The message names the source (a file path or the constructor argument), says what is wrong
    and how to fix it. The three parts are also available as attributes, so callers can log
    them separately.

    Attributes:
        source: The file path, or a description such as ``"the resource_config argument"``.
        problem: What is wrong, e.g. ``"the file does not exist"``.
        fix: What to do about it.
    """

    def __init__(self, source: str, problem: str, fix: str) -> None:
        # Keep all three parts in ``args`` so the exception pickles and unpickles unchanged.
        super().__init__(source, problem, fix)
        self.source = source
        self.problem = problem
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.source}: {self.problem}. To fix: {self.fix}"


__all__ = [
    "TrainingEnvironmentError",
]
