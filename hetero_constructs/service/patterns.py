"""The model's patterns are Java regular expressions: translated for Python's ``re``.

A Java construct with no exact Python equivalent is widened, never narrowed (a pattern may
accept a little more than the API, which the service still rejects, but never rejects what the
API accepts); one that cannot be translated at all is recorded and not enforced.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Callable
from functools import cache
from typing import NamedTuple


class JavaClass(NamedTuple):
    """How one Java character class of the model is written for Python's ``re``.

    ``members`` goes inside a character set. ``exact`` is False where Python has no such
    class and a wider one stands in: a pattern may then accept a little more than the API
    (the service still rejects it), but never rejects what the API accepts.
    """

    members: str
    exact: bool
    note: str


# Unicode general categories (Java ``\p{L}`` and the like). Python's ``re`` knows word
# characters (``str.isalnum()`` and ``_``), whitespace and their complements only.
_CATEGORY_CLASSES = {
    "L": JavaClass(r"\w", False, "letters are word characters; \\w also takes digits and _"),
    "N": JavaClass(r"\w", False, "numbers are word characters; \\w also takes letters and _"),
    # Listed one by one (``_separators``): \s would also take tabs and newlines, which the
    # API's tag pattern forbids.
    "Z": JavaClass("", True, "space, line and paragraph separators, listed one by one"),
    "M": JavaClass(r"\W", False, "marks are non-word characters; \\W takes every other one"),
    "P": JavaClass(r"\W_", False, "punctuation is non-word characters and the underscore (Pc)"),
    "S": JavaClass(r"\W", False, "symbols are non-word characters; \\W takes every other one"),
    "C": JavaClass(r"\W", False, "other (controls, format) are non-word characters"),
}


# Java's POSIX classes are ASCII-only (without UNICODE_CHARACTER_CLASS): exact translations.
_POSIX_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": r"\x00-\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": r"!-/:-@\[-`{-~",
    "Graph": r"!-~",
    "Print": r" -~",
    "Blank": r" \t",
    "Cntrl": r"\x00-\x1f\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": r" \t\n\x0b\f\r",
}


JAVA_CLASSES: dict[str, JavaClass] = {
    **{f"\\p{{{name}}}": java for name, java in _CATEGORY_CLASSES.items()},
    **{f"\\p{name}": java for name, java in _CATEGORY_CLASSES.items()},
    **{
        f"\\p{{{name}}}": JavaClass(members, True, f"POSIX {name} (ASCII) in Java")
        for name, members in _POSIX_CLASSES.items()
    },
}


_TOKENS = r"""
      (?P<java_class>\\[pP](?:\{\w+\}|[A-Za-z]))
    | \\u(?P<high>[dD][89abAB][0-9a-fA-F]{2})\\u(?P<low>[dD][c-fC-F][0-9a-fA-F]{2})
    | (?P<quoted>\\[QE])
    | \\.
    | (?P<set_open>\[\^?\]?)
    | (?P<anchor_repeat>\$\{\d+(?:,\d*)?\})
    | (?P<intersection>&&)
    | .
    """


# Constructs that read a group's text; without them, no group's capture is ever read.
_GROUP_READERS = r"\\[1-9]|\(\?P=|\\k<|\(\?\("


@cache
def _separators() -> str:
    """Unicode category Z (space, line and paragraph separators), escaped for a set."""
    found = (chr(code) for code in range(0x10000))  # every separator is in the BMP
    return "".join(re.escape(char) for char in found if unicodedata.category(char)[0] == "Z")


class UntranslatablePattern(ValueError):
    """A Java construct with no Python equivalent that keeps the pattern's meaning."""


def translate_pattern(pattern: str, *, keep_groups: bool = False) -> str:
    """A model pattern (Java syntax) rewritten for Python's ``re``.

    - ``\\p{...}`` classes become the Python classes of ``JAVA_CLASSES``;
    - a UTF-16 surrogate pair escape (``\\uD800\\uDC00``) becomes the code point it encodes;
    - a quantifier on the end anchor (``${1,128}``) is dropped: it repeats a zero-width match.

    - groups become non-capturing (``(?:``): a full match never reads what they captured, and
      Python's engine repeats a non-capturing group faster. ``keep_groups`` keeps them, and
      so does a pattern with a backreference.

    Raises ``UntranslatablePattern`` for negated classes, nested sets and ``\\Q...\\E``.
    """
    out: list[str] = []
    in_set = False
    keep_groups = keep_groups or re.search(_GROUP_READERS, pattern) is not None
    for token in re.finditer(_TOKENS, pattern, re.VERBOSE | re.DOTALL):
        text = token.group()
        if token.group("java_class"):
            java = JAVA_CLASSES.get(text)
            if java is None:
                raise UntranslatablePattern(f"{text} in /{pattern}/")
            members = _separators() if java is _CATEGORY_CLASSES["Z"] else java.members
            out.append(members if in_set else f"[{members}]")
        elif token.group("high"):
            high, low = int(token.group("high"), 16), int(token.group("low"), 16)
            out.append(f"\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08X}")
        elif token.group("quoted") or (in_set and token.group("intersection")):
            raise UntranslatablePattern(f"{text} in /{pattern}/")
        elif token.group("set_open"):
            if in_set:
                raise UntranslatablePattern(f"nested set in /{pattern}/")
            in_set = True
            out.append(text)
        elif text == "]" and in_set:
            in_set = False
            out.append(text)
        elif token.group("anchor_repeat") and not in_set:
            out.append("$")
        elif text == "(" and not in_set and not keep_groups and pattern[token.end() :][:1] != "?":
            out.append("(?:")
        else:
            out.append(text)
    return "".join(out)


# Patterns that could not be translated; they are not enforced (the service still is).
UNCHECKED_PATTERNS: set[str] = set()


@cache
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a model pattern for a full match (the model's patterns carry no anchors).

    A pattern that cannot be translated is recorded in ``UNCHECKED_PATTERNS`` and accepts
    everything, so that a spec gets a verdict from the other checks instead of an error.
    """
    try:
        return re.compile(translate_pattern(pattern), re.DOTALL)
    except (UntranslatablePattern, re.error) as error:
        UNCHECKED_PATTERNS.add(pattern)
        warnings.warn(f"model pattern not enforced: {error}", RuntimeWarning, stacklevel=2)
        return re.compile(".*", re.DOTALL)


# Patterns every string fully matches (with DOTALL): checking them would only cost time.
TOTAL_PATTERNS = frozenset({".*", r"[\S\s]*", r"[\s\S]*"})


# Patterns every string but the empty one fully matches (with DOTALL).
_NON_EMPTY_PATTERNS = frozenset({".+", r"[\S\s]+", r"[\s\S]+"})


class _LazyPattern:
    """A model pattern compiled on its first use (a request touches few of the model's).

    ``fullmatch(value)`` is truthy exactly when the pattern matches all of ``value``.
    """

    __slots__ = ("fullmatch", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.fullmatch: Callable[[str], object] = (
            len if source in _NON_EMPTY_PATTERNS else self._compile_and_match
        )

    def _compile_and_match(self, value: str) -> object:
        self.fullmatch = compile_pattern(self.source).fullmatch
        return self.fullmatch(value)


def lazy_pattern(pattern: str | None) -> _LazyPattern | None:
    return None if pattern is None or pattern in TOTAL_PATTERNS else _LazyPattern(pattern)


__all__ = [
    "JAVA_CLASSES",
    "TOTAL_PATTERNS",
    "UNCHECKED_PATTERNS",
    "JavaClass",
    "UntranslatablePattern",
    "compile_pattern",
    "lazy_pattern",
    "translate_pattern",
]
