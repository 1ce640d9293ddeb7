"""A size trick behind this module: the Lambda's sources without their documentation.

The Lambda package must stay under 64 KB zipped (the size the figures in docs/performance.md
hold); the core's docstrings, comments, ``__all__`` lists, typing-only imports and the
catalogues' doc texts are a third of it. ``bundled_source`` blanks them in place, so line
numbers in a Lambda traceback match the repository. The plain path is the source as it is;
``tests/constructs/test_lambda_trim.py`` checks, for every bundled module, that what remains is
the plain source's syntax tree less exactly those parts.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator

# Calls whose keyword arguments are documentation only (the catalogues are generated outside the
# Lambda): each argument and what takes its place.
DOC_ARGUMENTS: dict[str, dict[str, str]] = {
    "rule": {"source": '""', "example": '""'},
    "register_rule": {"title": '""', "details": '""', "source": '""', "examples": "()"},
    "spec_field": {"doc": '""'},
}


def _docstring(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if (
        isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[0]
    return None


_Part = ast.stmt | ast.expr


def _documentation_only(tree: ast.Module) -> Iterator[tuple[_Part, str]]:
    """(node, replacement) for each part of a module that only documentation and typing use.

    A module's ``__all__`` list documents its exports; nothing in the Lambda star-imports.
    """
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign | ast.AnnAssign)
            and isinstance(statement.value, ast.List | ast.Tuple)
            and any(
                isinstance(target, ast.Name) and target.id == "__all__"
                for target in (
                    statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                )
            )
        ):
            yield statement, ""
    for node in ast.walk(tree):
        docstring = _docstring(node)
        if docstring is not None:
            only_statement = len(getattr(node, "body", ())) == 1
            yield docstring, "..." if only_statement and not isinstance(node, ast.Module) else ""
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
            and not node.orelse
        ):
            yield from ((statement, "") for statement in node.body[1:])
            yield node.body[0], "pass"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in DOC_ARGUMENTS
        ):
            blanked = DOC_ARGUMENTS[node.func.id]
            for keyword in node.keywords:
                if keyword.arg in blanked:
                    yield keyword.value, blanked[keyword.arg]


def _replace(lines: list[bytes], node: _Part, replacement: str) -> None:
    """Put ``replacement`` where ``node`` was; the lines it spanned stay, empty."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    start, end = node.col_offset, node.end_col_offset or 0  # UTF-8 byte offsets
    head, tail = lines[first][:start], lines[last][end:]
    if first == last:
        lines[first] = head + replacement.encode() + tail
        return
    lines[first] = head + replacement.encode() + b"\n"
    for index in range(first + 1, last):
        lines[index] = b"\n"
    lines[last] = tail if tail.strip() else b"\n"


def bundled_source(source: str) -> str:
    """``source`` without its docstrings, comments, typing-only imports and rule doc texts.

    Every line keeps its number; a body left with only a docstring gets ``...``.
    """
    tree = ast.parse(source)
    lines = source.encode().splitlines(keepends=True)
    edits = sorted(_documentation_only(tree), key=lambda edit: (edit[0].lineno, edit[0].col_offset))
    covered_to = (0, 0)
    kept: list[tuple[_Part, str]] = []
    for node, replacement in edits:  # skip parts inside a part already blanked
        if (node.lineno, node.col_offset) >= covered_to:
            kept.append((node, replacement))
            covered_to = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    for node, replacement in reversed(kept):
        _replace(lines, node, replacement)
    text = b"".join(lines).decode()
    comments = [
        token
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    numbered = text.splitlines(keepends=True)
    for token in reversed(comments):
        row, column = token.start
        numbered[row - 1] = numbered[row - 1][:column].rstrip() + "\n"
    return "".join(line if line.strip() else "\n" for line in numbered)


__all__ = [
    "DOC_ARGUMENTS",
    "bundled_source",
]
