"""The runtime folder works when copied into a code directory as ``hetero_runtime``.

Training containers do not have ``hetero_constructs`` (nor botocore/yaml, which its top-level
package imports), so the folder must be self-contained: relative imports and the standard
library only.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import hetero_constructs.runtime as runtime_package
from hetero_constructs.runtime import TrainingEnvironment

WriteConfig = Callable[..., Path]
RUNTIME_DIR = Path(runtime_package.__file__).parent
SOURCES = sorted(RUNTIME_DIR.rglob("*.py"))

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import hetero_runtime
env = hetero_runtime.TrainingEnvironment()
try:
    hetero_runtime.TrainingEnvironment(base_dir=sys.argv[1])
except hetero_runtime.TrainingEnvironmentError as error:
    message = str(error)
loaded = sorted(name for name in sys.modules if name.split(".")[0].startswith("hetero"))
print(json.dumps({"env": env.to_dict(), "error": message, "modules": loaded}))
"""


def test_copied_folder_runs_without_site_packages(
    tmp_path: Path, write_config_files: WriteConfig
) -> None:
    code_dir = tmp_path / "code"
    shutil.copytree(
        RUNTIME_DIR, code_dir / "hetero_runtime", ignore=shutil.ignore_patterns("__pycache__")
    )
    config = {
        "current_host": "algo-2",
        "hosts": ["algo-1", "algo-2"],
        "current_group_name": "gpu",
        "instance_groups": [
            {"instance_group_name": "cpu", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1"]},
            {"instance_group_name": "gpu", "instance_type": "ml.g5.xlarge", "hosts": ["algo-2"]},
        ],
    }
    raw = {
        "sagemaker_torch_distributed_enabled": "true",
        "sagemaker_distribution_instance_groups": '["gpu"]',
        "epochs": "2",
    }
    write_config_files(tmp_path / "ml", config, raw)
    # -I: ignore PYTHON* variables and the user site; -S: no site-packages at all, so any
    # third-party (or hetero_constructs) import would fail.
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", CHILD, str(code_dir)],
        env={"SAGEMAKER_BASE_DIR": str(tmp_path / "ml"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    expected = TrainingEnvironment(base_dir=tmp_path / "ml").to_dict()
    assert output["env"] == expected
    assert output["env"]["role"] == "distributed"
    assert "resourceconfig.json: the file does not exist" in output["error"]
    assert output["modules"] == [
        "hetero_runtime",
        "hetero_runtime.config",
        "hetero_runtime.environment",
        "hetero_runtime.errors",
        "hetero_runtime.metrics",
    ]


def test_imports_are_relative_or_standard_library() -> None:
    for source in SOURCES:
        tree = ast.parse(source.read_text(), filename=str(source))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top == "__future__", (source, name)


def test_syntax_runs_on_older_container_pythons() -> None:
    """Framework containers for PyTorch 1.10+ / TensorFlow 2.6+ ship Python 3.8 and later."""
    for source in SOURCES:
        ast.parse(source.read_text(), filename=str(source), feature_version=(3, 8))
        assert "from __future__ import annotations" in source.read_text(), source
