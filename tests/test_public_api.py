"""The public API is explicit: what users write is at the top level, every module says what it
exports, and no exported name clashes with aws-cdk-lib's."""

from __future__ import annotations

import ast
from pathlib import Path

import hetero_constructs

ROOT = Path(__file__).resolve().parents[1]
# What users write is listed once: ``hetero_constructs._LAZY`` (public name -> its module),
# whose keys are ``__all__``; the type checkers' imports there are checked against it.
INIT = ROOT / "hetero_constructs" / "__init__.py"


def _type_checking_imports() -> dict[str, str]:
    """The ``if TYPE_CHECKING:`` imports of the package's ``__init__``, as ``_LAZY`` writes
    them: name -> module, or ``module:name`` when imported as another name."""
    imports: dict[str, str] = {}
    for node in ast.parse(INIT.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            assert isinstance(statement, ast.ImportFrom) and statement.module
            for alias in statement.names:
                public = alias.asname or alias.name
                defined = "" if alias.name == public else f":{alias.name}"
                imports[public] = f"{statement.module}{defined}"
    return imports


def test_the_top_level_exports_what_users_write() -> None:
    assert hetero_constructs.__all__ == sorted(hetero_constructs._LAZY)
    assert _type_checking_imports() == hetero_constructs._LAZY


def test_each_top_level_name_is_what_its_module_defines() -> None:
    import importlib

    for name, where in hetero_constructs._LAZY.items():
        module, _, defined_as = where.partition(":")
        value = getattr(hetero_constructs, name)
        assert value is getattr(importlib.import_module(module), defined_as or name), name
        assert (defined_as or name) in importlib.import_module(module).__all__, name


def test_no_top_level_name_is_also_an_aws_cdk_lib_name() -> None:
    import importlib

    # aws-cdk-lib's root and the modules an app that trains imports alongside this library.
    modules = ["aws_cdk"] + [
        f"aws_cdk.aws_{name}"
        for name in [
            "apigateway",
            "cloudwatch",
            "dynamodb",
            "ec2",
            "ecr",
            "events",
            "iam",
            "kms",
            "lambda",
            "logs",
            "s3",
            "s3_assets",
            "sagemaker",
            "sns",
            "sqs",
            "stepfunctions",
            "stepfunctions_tasks",
        ]
    ]
    cdk_names = {name for module in modules for name in dir(importlib.import_module(module))}
    assert set(hetero_constructs.__all__) & cdk_names == set()


def test_every_module_declares_what_it_exports() -> None:
    missing, unknown = [], []
    for path in sorted((ROOT / "hetero_constructs").rglob("*.py")):
        if "__pycache__" in path.parts or path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared: list[str] | None = None
        bound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id == "__all__":
                        literal = isinstance(node.value, ast.List | ast.Tuple)
                        declared = list(ast.literal_eval(node.value)) if literal else []
                    bound.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                bound.add(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        relative = path.relative_to(ROOT).as_posix()
        if declared is None:
            missing.append(relative)
        elif path != ROOT / "hetero_constructs" / "__init__.py":  # names made on first use
            unknown += [f"{relative}: {name}" for name in declared if name not in bound]
    assert missing == []
    assert unknown == []
