"""The packages import their names on first use: one core module costs only that module."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import hetero_constructs

ROOT = Path(__file__).resolve().parents[1]


def modules_after(statement: str) -> list[str]:
    """The library's and botocore's modules a fresh interpreter holds after ``statement``."""
    script = (
        f"import sys\n{statement}\n"
        "import json\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('hetero_constructs', 'botocore', 'boto3', 'yaml'))))"
    )
    result = subprocess.run(
        [sys.executable, "-B", "-c", script],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(result.stdout))


def test_one_core_module_imports_only_that_module() -> None:
    assert modules_after("from hetero_constructs.contract import lifecycle") == [
        "hetero_constructs",
        "hetero_constructs.contract",
        "hetero_constructs.contract.lifecycle",
    ]
    assert modules_after("import hetero_constructs") == ["hetero_constructs"]


def test_a_name_imports_its_module_on_first_use() -> None:
    loaded = modules_after("from hetero_constructs import TrainingSpec")
    assert "hetero_constructs.spec.training" in loaded
    assert "hetero_constructs.checks.registry" not in loaded
    assert "botocore" not in loaded


@pytest.mark.parametrize("package", [hetero_constructs])
def test_every_exported_name_is_the_defining_modules_object(package: Any) -> None:
    lazy: dict[str, str] = package._LAZY
    assert sorted(lazy) == sorted(package.__all__)
    for name, where in lazy.items():
        module, _, defined_as = where.partition(":")
        defined = getattr(importlib.import_module(module), defined_as or name)
        assert getattr(package, name) is defined
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError):
        package.not_a_name  # noqa: B018


def test_plan_is_the_function_whatever_was_imported_first() -> None:
    script = (
        "import hetero_constructs.planning\n"
        "from hetero_constructs import plan\n"
        "import hetero_constructs\n"
        "assert callable(plan) and plan.__module__ == 'hetero_constructs.planning', plan\n"
        "assert hetero_constructs.planning.plan is plan and hetero_constructs.plan is plan\n"
    )
    subprocess.run([sys.executable, "-B", "-c", script], cwd=ROOT, check=True)
