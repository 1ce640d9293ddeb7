"""The public API is explicit: what users write is at the top level, every module says what it
exports, and no exported name clashes with aws-cdk-lib's."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import tomllib
import types
from pathlib import Path

import hetero_constructs

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "hetero_constructs"
# What users write is listed once: ``hetero_constructs._LAZY`` (public name -> its module),
# whose keys are ``__all__``; the type checkers' imports there are checked against it.
INIT = ROOT / "hetero_constructs" / "__init__.py"


def _type_checking_imports() -> dict[str, str]:
    """The ``if TYPE_CHECKING:`` imports of the package's ``__init__``, as ``_LAZY`` writes
    them: name -> module. Each is ``import name as name``, the form type checkers take as a
    re-export (mypy --strict refuses any other from a user's code)."""
    imports: dict[str, str] = {}
    for node in ast.parse(INIT.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            assert isinstance(statement, ast.ImportFrom) and statement.module
            for alias in statement.names:
                assert alias.asname == alias.name, f"{alias.name} as {alias.asname}"
                imports[alias.name] = statement.module
    return imports


def test_the_top_level_exports_what_users_write() -> None:
    assert hetero_constructs.__all__ == sorted(hetero_constructs._LAZY)
    assert _type_checking_imports() == hetero_constructs._LAZY


def test_each_top_level_name_is_what_its_module_defines() -> None:

    for name, module in hetero_constructs._LAZY.items():
        value = getattr(hetero_constructs, name)
        assert value is getattr(importlib.import_module(module), name), name
        assert name in importlib.import_module(module).__all__, name


def test_no_top_level_name_is_also_an_aws_cdk_lib_name() -> None:

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


# -- Public modules and what users read ------------------------------------------------------

PUBLIC_MODULES = hetero_constructs._PUBLIC_MODULES
PUBLIC_COMMANDS = hetero_constructs._PUBLIC_COMMANDS
# What users read, run and copy: it uses the public API only.
USER_PYTHON = [
    ROOT / "app.py",
    *sorted((ROOT / "examples").rglob("*.py")),
    *sorted((ROOT / "benchmarks").glob("*.py")),
]
USER_TEXT = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "examples").rglob("*.md")),
    *sorted((ROOT / "benchmarks").glob("*.md")),
]
# Where internals are the subject, each with its reason.
ABOUT_INTERNALS = {
    "docs/design.md": "the contributors' map of the internals (Layout names every folder)",
    "benchmarks/bench_lambda.py": "measures the Lambda package itself (lambda_bundle)",
    "benchmarks/bench_capacity.py": "measures templates with the deployability checks' own "
    "measurements, beyond the quotas the public checks refuse",
}
IMPORT_LINE = re.compile(
    r"^\s*(?:from\s+(hetero_constructs[\w.]*)\s+import\s+(\([^)]*\)|[^\n#]+)"
    r"|import\s+(hetero_constructs[\w.]*))",
    re.MULTILINE,
)
DOTTED = re.compile(r"hetero_constructs(?:\.\w+)+")


def _module_path(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _public_names(module: str) -> list[str]:
    return list(importlib.import_module(module).__all__)


def _problem(module: str, names: list[str]) -> str | None:
    """What is wrong with using ``names`` of ``module`` (no names: the module itself)."""
    if module not in PUBLIC_MODULES:
        return f"{module} is internal"
    exported = _public_names(module)
    for name in names:
        if name not in exported and f"{module}.{name}" not in PUBLIC_MODULES:
            return f"{module}.{name} is not in {module}.__all__"
    return None


def _reference_problem(dotted: str) -> str | None:
    """A prose reference ``hetero_constructs.a.b``: a public module, a public name of one, or a
    command users run with ``python -m``."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        if _module_path(module) is not None:
            rest = parts[end : end + 1]
            if module in PUBLIC_COMMANDS and not rest:
                return None
            return _problem(module, rest)
    return f"{dotted} names no module"


def test_the_public_modules_are_declared_and_documented() -> None:
    undocumented = []
    for module_name in PUBLIC_MODULES:
        parent = module_name.rpartition(".")[0]
        assert not parent or parent in PUBLIC_MODULES, f"{module_name}: its package is internal"
        module = importlib.import_module(module_name)
        assert (module.__doc__ or "").strip(), module_name
        assert module.__all__, module_name
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, types.ModuleType):  # a public submodule, declared as one
                assert value.__name__ in PUBLIC_MODULES, f"{module_name}.{name} is internal"
            if not (inspect.isclass(value) or inspect.isfunction(value)):
                continue
            doc = value.__doc__ or ""
            if not doc.strip() or doc.startswith(f"{value.__name__}("):  # dataclass's own
                undocumented.append(f"{module_name}.{name}")
            members = vars(value).items() if inspect.isclass(value) else []
            undocumented += [
                f"{module_name}.{name}.{member}"
                for member, function in members
                if not member.startswith("_")
                and inspect.isfunction(function)
                and not (function.__doc__ or "").strip()
            ]
    assert undocumented == []


def test_the_commands_users_run_are_the_declared_ones() -> None:
    for module in PUBLIC_COMMANDS:
        path = _module_path(module)
        assert path is not None, module
        if path.name == "__init__.py":
            assert (path.parent / "__main__.py").is_file(), module
        else:
            assert 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"), module
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    assert {target.partition(":")[0] for target in scripts.values()} <= set(PUBLIC_COMMANDS)


def test_docs_examples_benchmarks_and_the_app_use_only_the_public_api() -> None:
    problems = []
    for path in USER_PYTHON:
        relative = path.relative_to(ROOT).as_posix()
        if relative in ABOUT_INTERNALS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
                found = _problem(node.module or "", [alias.name for alias in node.names])
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names if a.name.startswith(PACKAGE)]
                found = next(filter(None, (_problem(m, []) for m in modules)), None)
            else:
                continue
            if found:
                problems.append(f"{relative}:{node.lineno}: {found}")
    for path in USER_TEXT:
        relative = path.relative_to(ROOT).as_posix()
        if relative in ABOUT_INTERNALS:
            continue
        text = path.read_text(encoding="utf-8")
        imported = set()
        for match in IMPORT_LINE.finditer(text):
            module, names, plain = match.groups()
            names_list = [n.split(" as ")[0].strip() for n in (names or "").strip("()").split(",")]
            found = _problem(module or plain, [n for n in names_list if n])
            imported.add(match.group(0))
            if found:
                problems.append(f"{relative}: {found}")
        prose = "".join(line for line in text.splitlines(True) if line not in imported)
        problems += [
            f"{relative}: {found}"
            for dotted in sorted(set(DOTTED.findall(prose)))
            if (found := _reference_problem(dotted))
        ]
    assert problems == []


def test_the_checks_catch_an_internal_import() -> None:
    assert _problem("hetero_constructs.constructs.hygiene", ["depend_on_policy_only"])
    assert _problem("hetero_constructs", ["no_such_name"])
    assert _problem("hetero_constructs", ["depend_on_policy_only"]) is None
    assert _problem("hetero_constructs.runtime", ["data"]) is None
    assert _reference_problem("hetero_constructs.local.moto_gaps")
    assert _reference_problem("hetero_constructs.deployability.catalogue") is None
    assert _reference_problem("hetero_constructs.runtime.TrainingEnvironment") is None
    match = IMPORT_LINE.search("x\n    from hetero_constructs.spec.file.reader import (\n a,\n)")
    assert match is not None and match.group(1) == "hetero_constructs.spec.file.reader"
