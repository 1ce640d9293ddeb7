"""The Lambda package: small, generated from botocore's model, and judging specs exactly as the
repository's core does with botocore's full model."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import types
import warnings
from pathlib import Path
from typing import Any

import boto3.session
import botocore.session
import pytest
from botocore.exceptions import ParamValidationError

from hetero_constructs.constructs import lambda_bundle
from hetero_constructs.constructs.lambda_bundle import (
    DATA_PATH,
    LAMBDA_OPERATIONS,
    MODULE_ARCHIVE,
    lambda_package,
    read_module_archive,
    trimmed_service_model,
    zip_bytes,
)
from hetero_constructs.service import model as service_model
from hetero_constructs.service.patterns import UNCHECKED_PATTERNS, translate_pattern
from tests.fixtures.rule_cases import CASES, materialize
from tests.fixtures.specs import spec_dict

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "specs" / "hetero_torch_distributed.json"
LIMIT = 65_536
KEYS = ("member", "key", "value")

# Reads spec dicts (JSON, stdin), prints each one's request and violations with the core and
# model it finds (PYTHONPATH, AWS_DATA_PATH).
JUDGE = textwrap.dedent(
    """
    import json, sys
    from hetero_constructs.service import model as service_model
    from hetero_constructs.planning import plan
    from hetero_constructs.spec.file.reader import read_spec
    results = []
    for data in json.load(sys.stdin):
        reading = read_spec(data)
        violations = list(reading.violations)
        request = None
        if reading.spec is not None:
            result = plan(reading.spec)
            violations += result.violations
            request = result.request
        results.append({"request": request, "violations": [v.to_dict() for v in violations]})
    operations = service_model._service_model().operation_names
    print(json.dumps({"operations": operations, "results": results}))
    """
)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the staged package (running Python in the cached one could add files)."""
    copy = tmp_path_factory.mktemp("lambda") / "package"
    shutil.copytree(lambda_package(), copy)
    return copy


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The example spec and every rule test's spec."""
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / "train.py").write_text("print('train')\n")
    pkg = tmp_path_factory.mktemp("package")
    (pkg / "train.py").write_text("print('train')\n")
    (pkg / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    dirs = {"<scripts>": str(scripts), "<package>": str(pkg)}
    example = json.loads(EXAMPLE.read_text())
    example["source_dir"] = str((EXAMPLE.parent / example["source_dir"]).resolve())
    cases = [
        materialize(case, dirs)
        for failing, passing in CASES.values()
        for case in (*failing, *passing)
    ]
    return [example, spec_dict(), *cases]


def judge(specs: list[dict[str, Any]], python_path: Path, data_path: Path | None) -> Any:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(python_path)}
    if data_path is not None:
        env["AWS_DATA_PATH"] = str(data_path)
    result = subprocess.run(
        [sys.executable, "-B", "-c", JUDGE],
        input=json.dumps(specs),
        capture_output=True,
        text=True,
        env=env,
        cwd=python_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_package_holds_the_handlers_the_core_and_the_trimmed_model(package: Path) -> None:
    names = {p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file()}
    version, _ = trimmed_service_model()
    assert {"submit.py", "events.py"} <= names  # the entry points the functions name
    assert {"hetero_constructs/__init__.py", MODULE_ARCHIVE} <= names
    # Nothing of the package beside the archive and what serves it (no constructs, runtime).
    assert {n for n in names if n.startswith("hetero_constructs/")} == {
        "hetero_constructs/__init__.py",
        MODULE_ARCHIVE,
    }
    assert f"{DATA_PATH}/sagemaker/{version}/service-2.json" in names
    # The core travels in one solid archive that the package's __init__ serves modules from.
    archived = set(read_module_archive((package / MODULE_ARCHIVE).read_bytes()))
    assert {"planning.py", "checks/rules/api/__init__.py"} <= archived
    # The bootstrap stands in for the package's __init__ (the public names: none imported here).
    assert "__init__.py" not in archived
    assert {"handlers/submit.py", "handlers/events.py", "handlers/token_store.py"} <= archived
    assert "spec/reference.py" not in archived  # the spec-field reference generator
    assert "spec/file/safe_yaml.py" not in archived  # spec files only; no PyYAML in the Lambda
    layers = ("spec/", "service/", "request/", "contract/", "checks/", "handlers/")
    assert all(n.startswith(layers) or n == "planning.py" for n in archived)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_zipped_package_fits_in_64_kb(package: Path) -> None:
    size = len(zip_bytes(package))
    assert size <= LIMIT, f"{size} bytes zipped"


def test_runner_ships_this_package_and_points_aws_data_path_at_its_model() -> None:
    from hetero_constructs.constructs import runner, runner_resources

    assert runner.lambda_package is lambda_package
    assert runner_resources.DATA_PATH is DATA_PATH


def test_trimmed_model_is_botocore_model_cut_to_the_operations() -> None:
    version, trimmed = trimmed_service_model()
    loader = lambda_bundle._botocore_loader()
    full = loader.load_service_model("sagemaker", "service-2", version)
    assert trimmed["metadata"] == full["metadata"]
    assert set(trimmed["operations"]) == {*LAMBDA_OPERATIONS, service_model.OPERATION}
    shapes = trimmed["shapes"]
    unread = ("documentation", "box")  # box: a Smithy trait botocore never reads
    for name, shape in shapes.items():  # each shape as botocore has it, without those
        expected = {k: v for k, v in full["shapes"][name].items() if k not in unread}
        for member in expected.get("members", {}).values():
            for key in unread:
                member.pop(key, None)
        assert shape == expected, name
    references = [
        ref["shape"]
        for shape in shapes.values()
        for ref in [*shape.get("members", {}).values(), *(shape.get(k) for k in KEYS)]
        if ref is not None
    ]
    references += [
        ref["shape"]
        for op in trimmed["operations"].values()
        for ref in [op.get("input"), op.get("output"), *op.get("errors", [])]
        if ref
    ]
    assert set(references) == set(shapes)  # closed, and nothing unreachable
    assert "documentation" not in json.dumps(trimmed)
    assert '"box"' not in json.dumps(trimmed)
    assert len(shapes) < len(full["shapes"]) / 10


def test_every_pattern_of_the_trimmed_model_compiles() -> None:
    _, trimmed = trimmed_service_model()
    patterns = {s["pattern"] for s in trimmed["shapes"].values() if "pattern" in s}
    assert r"arn:[\p{Alnum}\-]+:lambda:[\p{Alnum}\-]+:[0-9]{12}:function:.*" in patterns
    for pattern in patterns:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            re.compile(translate_pattern(pattern), re.DOTALL)
    assert not UNCHECKED_PATTERNS


def test_trimmed_model_judges_specs_as_the_full_model_does(
    package: Path, specs: list[dict[str, Any]]
) -> None:
    full = judge(specs, ROOT, None)
    trimmed = judge(specs, ROOT, package / DATA_PATH)
    assert len(full["operations"]) > 300
    assert sorted(trimmed["operations"]) == sorted({*LAMBDA_OPERATIONS, "CreateTrainingJob"})
    assert trimmed["results"] == full["results"]
    outcomes = full["results"]
    assert any(r["request"] for r in outcomes) and any(r["violations"] for r in outcomes)


def test_bundled_core_judges_specs_as_the_repository_core_does(
    package: Path, specs: list[dict[str, Any]]
) -> None:
    """The bundle leaves out docstrings, comments and rule docs: nothing a plan uses."""
    repository = judge(specs, ROOT, package / DATA_PATH)
    bundled = judge(specs, package, package / DATA_PATH)
    assert bundled["results"] == repository["results"]


def test_handlers_import_and_plan_the_example_from_the_staged_directory_alone(
    package: Path,
) -> None:
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.modules["yaml"] = None  # the Lambda runtime has no PyYAML
        sys.modules["aws_cdk"] = None  # nor the CDK: the handlers never import it
        import events, submit
        from hetero_constructs.planning import plan
        from hetero_constructs.spec.file.reader import read_spec_file
        from hetero_constructs.service import model as service_model
        result = plan(read_spec_file({str(EXAMPLE)!r}).spec_or_raise())
        loaded = [m.__file__ for n, m in sys.modules.items() if n.startswith("hetero_constructs")]
        print(json.dumps({{
            "request": result.request,
            "loaded_from_package": all(f.startswith({str(package)!r}) for f in loaded),
            "operations": len(service_model._service_model().operation_names),
        }}))
        """
    )
    result = subprocess.run(
        [sys.executable, "-B", "-c", script],
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(package),
            "AWS_DATA_PATH": str(package / DATA_PATH),
        },
        cwd=package,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["request"]["ResourceConfig"]["InstanceGroups"][1]["InstanceGroupName"] == "gpu"
    assert outcome["loaded_from_package"]
    assert outcome["operations"] == len({*LAMBDA_OPERATIONS, "CreateTrainingJob"})
    assert not any(package.rglob("__pycache__"))  # python -B, as in Lambda


def _client_on(data_path: Path) -> tuple[Any, list[dict[str, Any]]]:
    """A SageMaker client on the model under ``data_path`` that sends nothing: each built call
    is recorded instead."""
    session = botocore.session.Session()
    session.set_config_variable("data_path", str(data_path))  # the Loader's AWS_DATA_PATH
    client = boto3.session.Session(botocore_session=session).client(
        "sagemaker",
        region_name="us-west-2",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    sent: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        sent.append(params)
        return types.SimpleNamespace(status_code=200, headers={}), {}

    client.meta.events.register("before-call.sagemaker", record)
    return client, sent


def test_a_client_on_the_trimmed_model_validates_and_builds_every_call(package: Path) -> None:
    client, sent = _client_on(package / DATA_PATH)
    assert sorted(client.meta.service_model.operation_names) == sorted(LAMBDA_OPERATIONS)
    request = json.loads(json.dumps(_example_request()))
    with pytest.raises(ParamValidationError, match="RoleArn"):
        client.create_training_job(**{k: v for k, v in request.items() if k != "RoleArn"})
    with pytest.raises(ParamValidationError, match="InstanceCount"):
        client.create_training_job(**{**request, "ResourceConfig": {"InstanceCount": "2"}})
    arn = "arn:aws:sagemaker:us-west-2:111122223333:training-job/job"
    calls = {
        "create_training_job": request,
        "describe_training_job": {"TrainingJobName": "job"},
        "stop_training_job": {"TrainingJobName": "job"},
        "list_training_jobs": {"NameContains": "job", "MaxResults": 10},
        "list_tags": {"ResourceArn": arn},
        "add_tags": {"ResourceArn": arn, "Tags": [{"Key": "team", "Value": "ml"}]},
    }
    assert len(calls) == len(LAMBDA_OPERATIONS)
    for method, params in calls.items():
        getattr(client, method)(**params)
    bodies = [json.loads(call["body"]) for call in sent]
    assert bodies == list(calls.values())
    assert [call["headers"]["X-Amz-Target"] for call in sent] == [
        f"SageMaker.{name}" for name in LAMBDA_OPERATIONS
    ]


def _example_request() -> dict[str, Any]:
    from hetero_constructs.planning import plan
    from hetero_constructs.spec.file.reader import read_spec_file

    request = plan(read_spec_file(EXAMPLE).spec_or_raise()).request
    assert request is not None
    return request


def test_every_sagemaker_call_of_the_handlers_is_in_the_trimmed_model(package: Path) -> None:
    """A handler that calls another SageMaker API needs it in LAMBDA_OPERATIONS."""
    full, _ = _client_on(Path(botocore.__file__).parent / "data")
    methods = full.meta.method_to_api_mapping
    handlers = read_module_archive((package / MODULE_ARCHIVE).read_bytes())
    called = {
        methods[name]
        for path, source in handlers.items()
        # The handlers and the run contract's AWS calls they share (contract/training_job.py).
        if path.startswith(("handlers/", "contract/"))
        for name in re.findall(r"\.(\w+)\(", source)
        if name in methods
    }
    assert {"CreateTrainingJob", "DescribeTrainingJob", "StopTrainingJob"} <= called
    assert called <= set(LAMBDA_OPERATIONS)
