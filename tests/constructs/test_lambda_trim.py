"""The Lambda's sources without their documentation: the same code, line for line.

``bundled_source`` is a size trick (``constructs/_lambda_trim.py``); the plain path is the
source as it is. Each bundled module must be the plain source's syntax tree less its
docstrings, ``__all__``, typing-only imports and catalogue doc texts, and nothing else.
"""

from __future__ import annotations

import ast
from typing import Any

from hetero_constructs.constructs import lambda_bundle
from hetero_constructs.constructs._lambda_trim import DOC_ARGUMENTS, bundled_source


class _PlainlyUndocumented(ast.NodeTransformer):
    """The parts ``bundled_source`` blanks, removed from a syntax tree the plain way."""

    def _body(self, body: list[ast.stmt], owner: ast.AST) -> list[ast.stmt]:
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            body = body[1:] or ([] if isinstance(owner, ast.Module) else [_ellipsis()])
        return body

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            node.body = self._body(node.body, node)
        if isinstance(node, ast.Module):
            node.body = [s for s in node.body if not _is_all(s)]
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
            and not node.orelse
        ):
            node.body = [ast.Pass()]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            blanked = DOC_ARGUMENTS.get(node.func.id, {})
            for keyword in node.keywords:
                if keyword.arg in blanked:
                    keyword.value = ast.parse(blanked[keyword.arg], mode="eval").body
        return super().generic_visit(node)


def _ellipsis() -> ast.stmt:
    return ast.Expr(ast.Constant(...))


def _is_all(statement: ast.stmt) -> bool:
    targets = (
        statement.targets
        if isinstance(statement, ast.Assign)
        else [statement.target]
        if isinstance(statement, ast.AnnAssign)
        else []
    )
    return isinstance(getattr(statement, "value", None), ast.List | ast.Tuple) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in targets
    )


def test_each_bundled_module_is_its_plain_source_less_documentation() -> None:
    compared = 0
    for _, path in lambda_bundle._core_files():
        source = path.read_text()
        plain = _PlainlyUndocumented().visit(ast.parse(source))
        assert ast.dump(ast.parse(bundled_source(source))) == ast.dump(plain), path
        compared += 1
    assert compared > 50  # every module of the core, not a few


SAMPLE = '''\
"""Module doc."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import (
        Iterator,
    )


class Only:
    """A class with nothing but its doc."""


@rule("X-1", source="seed " + "text", example=(
    "multi"
    "line"
), backstop=True)  # a remark
def check(value: int) -> int:
    """Doc with é and
    two lines."""
    text = "# not a comment"  # a remark
    return value + len(text)


__all__ = [
    "Only",
    "check",
]
'''


def test_bundled_source_keeps_code_and_line_numbers_and_drops_documentation() -> None:
    bundled = bundled_source(SAMPLE)
    assert len(bundled.splitlines()) == len(SAMPLE.splitlines())
    tree = ast.parse(bundled)
    assert ast.get_docstring(tree) is None
    assert "Doc" not in bundled and "remark" not in bundled and "seed" not in bundled
    assert '"# not a comment"' in bundled and "backstop=True" in bundled
    assert bundled.splitlines()[23].strip() == 'text = "# not a comment"'
    namespace: dict[str, Any] = {"rule": lambda *a, **k: lambda f: f}
    exec(compile(bundled, "sample", "exec"), namespace)
    assert namespace["check"](1) == 16
    assert namespace["Only"].__doc__ is None
    assert "__all__" not in namespace  # it documents exports; nothing star-imports in the Lambda


def test_every_bundled_module_compiles_with_its_line_count() -> None:
    for _, path in lambda_bundle._core_files():
        source = path.read_text()
        bundled = bundled_source(source)
        compile(bundled, str(path), "exec")
        assert len(bundled.splitlines()) == len(source.splitlines()), path
        assert len(bundled) < len(source) or not source.strip(), path
