"""Every field a spec file may carry is honoured in the synthesized template or is a violation.

Each case writes the example spec file with a distinctive value for the field,
builds the job with ``HeterogeneousTrainingJob.from_spec_file``, synthesizes the app and finds
the value in the template: in the CreateTrainingJob request the submit Lambda plans from the
payload the state machine carries (the same ``plan`` call as ``handlers/submit.py``), in the
code asset, the state machine or the role; or the construct refuses it with a named violation.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hetero_constructs import HeterogeneousTrainingJob, SpecValidationError
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.distribution import Launcher
from hetero_constructs.spec.file.reader import spec_from_dict
from tests.fixtures.templates import definitions, policy_statements, resources

REPO = Path(__file__).parents[2]
EXAMPLE = REPO / "examples" / "specs" / "hetero_torch_distributed.json"
REGION = "us-west-2"
KEY = "arn:aws:kms:us-west-2:111122223333:key/11111111-2222-3333-4444-555555555555"
OTHER_KEY = "arn:aws:kms:us-west-2:111122223333:key/66666666-7777-8888-9999-000000000000"
HOMOGENEOUS = {
    "instance_groups": None,
    "distribution": None,
    "channels": {"train": "s3://my-training-bucket/datasets/train/"},
    "instance_type": "ml.g5.2xlarge",
    "instance_count": 1,
}
PYTORCH_22 = {"framework_version": "2.2.0", "py_version": "py310"}
ACK_REASON = "p3dn.24xlarge is in the SDK's SMDDP list; validated on our cluster"


@dataclass
class Synthesized:
    """What a case looks at: the template, the payload and the request it plans to."""

    outdir: Path
    template: dict[str, Any]
    machine: dict[str, Any]  # the job's AWS::StepFunctions::StateMachine properties
    payload: dict[str, Any]
    request: dict[str, Any]

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.request["HyperParameters"].items()}

    def variant_request(self, variant: int) -> dict[str, Any]:
        """The request of a fallback variant, as the submit Lambda plans it after failures."""
        return _planned(self.payload, variant)


def _planned(payload: dict[str, Any], variant: int | None = None) -> dict[str, Any]:
    # What the submit Lambda does with the payload (handlers/submit.py prepare, no overrides).
    deployment = Deployment(job_name=f"{payload['jobNamePrefix']}-run", **payload["deployment"])
    planned = plan(spec_from_dict(payload["spec"]), deployment, variant=variant)
    assert planned.request is not None, planned.violations
    return planned.request


def synthesize(tmp_path: Path, changes: dict[str, Any]) -> Synthesized:
    data = json.loads(EXAMPLE.read_text())
    data["source_dir"] = str(REPO / "examples" / "hetero_training")
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    outdir = tmp_path / "cdk.out"
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Fields", env=cdk.Environment(region=REGION))
    HeterogeneousTrainingJob.from_spec_file(stack, "Job", path)
    template = app.synth().get_stack_by_name("Fields").template
    ((logical_id, definition),) = definitions(template).items()
    payload = definition["States"]["Run training job"]["Parameters"]["Payload"]
    machine = template["Resources"][logical_id]["Properties"]
    return Synthesized(outdir, template, machine, payload, _planned(payload))


def code_files(result: Synthesized) -> dict[str, bytes]:
    """The code asset the job's request points at, as staged in the cloud assembly."""
    submitted = result.hyperparameters["sagemaker_submit_directory"]
    digest = submitted.rsplit("/", 1)[1].split(".")[0]
    (staged,) = result.outdir.glob(f"asset.{digest}.*")
    with (
        gzip.open(staged) as compressed,
        tarfile.open(fileobj=io.BytesIO(compressed.read())) as archive,
    ):
        return {
            member.name: archive.extractfile(member).read()  # type: ignore[union-attr]
            for member in archive.getmembers()
            if member.isfile()
        }


def distinct_source(tmp_path: Path, entry_point: str = "train.py") -> str:
    source = tmp_path / "distinct-source"
    source.mkdir(exist_ok=True)
    (source / entry_point).write_text("print('distinct training code')\n")
    return str(source)


@dataclass(frozen=True)
class Case:
    """A field's distinctive value (with what it needs besides) and where it must show."""

    changes: Callable[[Path], dict[str, Any]]
    check: Callable[[Synthesized], None] | None = None
    violation: str | None = None  # or the rule that refuses it


def _check(condition: Callable[[Synthesized], bool]) -> Callable[[Synthesized], None]:
    def check(result: Synthesized) -> None:
        assert condition(result)

    return check


def fixed(changes: dict[str, Any]) -> Callable[[Path], dict[str, Any]]:
    return lambda _: changes


def role_is(result: Synthesized) -> None:
    assert result.request["RoleArn"] == "arn:aws:iam::111122223333:role/SpecFileRole"
    # Imported, not replaced by a created execution role.
    assert not [k for k in resources(result.template, "AWS::IAM::Role") if "ExecutionRole" in k]


def base_job_name_is_the_prefix(result: Synthesized) -> None:
    assert result.payload["jobNamePrefix"] == "distinct-base"
    assert result.machine["StateMachineName"] == "distinct-base"
    assert result.request["TrainingJobName"].startswith("distinct-base-")


def acknowledged(result: Synthesized) -> None:
    reason = ACK_REASON
    assert result.payload["spec"]["acknowledgments"] == {"LAU-SMDDP-INSTANCE": reason}
    recorded = [
        entry
        for role in resources(result.template, "AWS::IAM::Role").values()
        for entry in role.get("Metadata", {}).get("hetero-constructs:acknowledged", [])
    ]
    assert recorded == [
        {"rule": "LAU-SMDDP-INSTANCE", "path": "instance_groups[1].instance_type", "reason": reason}
    ]


def source_is_shipped(result: Synthesized) -> None:
    assert code_files(result)["train.py"] == b"print('distinct training code')\n"


def entry_point_is_run(result: Synthesized) -> None:
    assert result.hyperparameters["sagemaker_program"] == "distinct_train.py"
    assert "distinct_train.py" in code_files(result)


CASES: dict[str, Case] = {
    "framework": Case(
        fixed(
            {
                "framework": "tensorflow",
                "framework_version": "2.13.0",
                "py_version": "py310",
                "distribution": {"mpi": {"enabled": True}, "instance_groups": ["gpu"]},
            }
        ),
        _check(
            lambda r: (
                "/tensorflow-training:2.13.0-"
                in r.request["AlgorithmSpecification"]["TrainingImage"]
            )
        ),
    ),
    "framework_version": Case(
        fixed(PYTORCH_22),
        _check(lambda r: ":2.2.0-" in r.request["AlgorithmSpecification"]["TrainingImage"]),
    ),
    "py_version": Case(
        fixed(PYTORCH_22),
        _check(lambda r: r.request["AlgorithmSpecification"]["TrainingImage"].endswith("-py310")),
    ),
    "image_uri": Case(
        fixed({"image_uri": "111122223333.dkr.ecr.us-west-2.amazonaws.com/distinct:7"}),
        _check(
            lambda r: (
                r.request["AlgorithmSpecification"]["TrainingImage"]
                == "111122223333.dkr.ecr.us-west-2.amazonaws.com/distinct:7"
            )
        ),
    ),
    "entry_point": Case(
        lambda tmp: {
            "entry_point": "distinct_train.py",
            "source_dir": distinct_source(tmp, "distinct_train.py"),
        },
        entry_point_is_run,
    ),
    "source_dir": Case(
        lambda tmp: {"source_dir": distinct_source(tmp)},
        source_is_shipped,
    ),
    "role": Case(fixed({"role": "arn:aws:iam::111122223333:role/SpecFileRole"}), role_is),
    "region": Case(fixed({"region": "eu-west-1"}), violation="CDK-REGION"),
    "output_path": Case(
        fixed({"output_path": "s3://distinct-output/runs/"}),
        _check(
            lambda r: r.request["OutputDataConfig"]["S3OutputPath"] == "s3://distinct-output/runs/"
        ),
    ),
    "job_name": Case(fixed({"job_name": "distinct-job-2026"}), violation="CDK-JOB-NAME"),
    "base_job_name": Case(fixed({"base_job_name": "distinct-base"}), base_job_name_is_the_prefix),
    "instance_type": Case(
        fixed({**HOMOGENEOUS, "instance_type": "ml.g5.12xlarge"}),
        _check(lambda r: r.request["ResourceConfig"]["InstanceType"] == "ml.g5.12xlarge"),
    ),
    "instance_count": Case(
        fixed({**HOMOGENEOUS, "instance_count": 3}),
        _check(lambda r: r.request["ResourceConfig"]["InstanceCount"] == 3),
    ),
    "volume_size": Case(
        fixed({"volume_size": 123}),
        _check(lambda r: r.request["ResourceConfig"]["VolumeSizeInGB"] == 123),
    ),
    "max_run": Case(
        fixed({"max_run": 7777}),
        _check(lambda r: r.request["StoppingCondition"]["MaxRuntimeInSeconds"] == 7777),
    ),
    "input_mode": Case(
        fixed({"input_mode": "FastFile"}),
        _check(lambda r: r.request["AlgorithmSpecification"]["TrainingInputMode"] == "FastFile"),
    ),
    "container_log_level": Case(
        fixed({"container_log_level": 10}),
        _check(lambda r: r.hyperparameters["sagemaker_container_log_level"] == 10),
    ),
    "volume_kms_key": Case(
        fixed({"volume_kms_key": KEY}),
        _check(lambda r: r.request["ResourceConfig"]["VolumeKmsKeyId"] == KEY),
    ),
    "output_kms_key": Case(
        fixed({"output_kms_key": OTHER_KEY}),
        _check(lambda r: r.request["OutputDataConfig"]["KmsKeyId"] == OTHER_KEY),
    ),
    "enable_network_isolation": Case(
        fixed({"enable_network_isolation": True}),
        _check(lambda r: r.request["EnableNetworkIsolation"] is True),
    ),
    "encrypt_inter_container_traffic": Case(
        fixed({"encrypt_inter_container_traffic": True}),
        _check(lambda r: r.request["EnableInterContainerTrafficEncryption"] is True),
    ),
    "use_spot_instances": Case(
        fixed({"use_spot_instances": True, "max_wait": 20_000}),
        _check(lambda r: r.request["EnableManagedSpotTraining"] is True),
    ),
    "max_wait": Case(
        fixed({"use_spot_instances": True, "max_wait": 20_000}),
        _check(lambda r: r.request["StoppingCondition"]["MaxWaitTimeInSeconds"] == 20_000),
    ),
    "checkpoint_s3_uri": Case(
        fixed({"checkpoint_s3_uri": "s3://distinct-checkpoints/run/"}),
        _check(
            lambda r: r.request["CheckpointConfig"]["S3Uri"] == "s3://distinct-checkpoints/run/"
        ),
    ),
    "checkpoint_local_path": Case(
        fixed(
            {
                "checkpoint_s3_uri": "s3://distinct-checkpoints/run/",
                "checkpoint_local_path": "/opt/ml/distinct",
            }
        ),
        _check(lambda r: r.request["CheckpointConfig"]["LocalPath"] == "/opt/ml/distinct"),
    ),
    "max_retry_attempts": Case(
        fixed({"max_retry_attempts": 4}),
        _check(lambda r: r.request["RetryStrategy"] == {"MaximumRetryAttempts": 4}),
    ),
    "training_plan_arn": Case(
        fixed(
            {"training_plan_arn": "arn:aws:sagemaker:us-west-2:111122223333:training-plan/distinct"}
        ),
        _check(
            lambda r: (
                r.request["ResourceConfig"]["TrainingPlanArn"]
                == "arn:aws:sagemaker:us-west-2:111122223333:training-plan/distinct"
            )
        ),
    ),
    "keep_alive_period_in_seconds": Case(
        fixed({**HOMOGENEOUS, "keep_alive_period_in_seconds": 600}),
        _check(lambda r: r.request["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600),
    ),
    "instance_groups": Case(
        fixed(
            {
                "instance_groups": [
                    {"name": "data", "instance_type": "ml.c5.9xlarge", "instance_count": 3},
                    {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
                ]
            }
        ),
        _check(
            lambda r: (
                r.request["ResourceConfig"]["InstanceGroups"][0]
                == {
                    "InstanceGroupName": "data",
                    "InstanceType": "ml.c5.9xlarge",
                    "InstanceCount": 3,
                }
            )
        ),
    ),
    "channels": Case(
        fixed(
            {
                "channels": {
                    "train": {"s3_uri": "s3://distinct-data/train/", "instance_groups": ["data"]},
                    "validation": {
                        "s3_uri": "s3://distinct-data/val/",
                        "instance_groups": ["data"],
                    },
                }
            }
        ),
        _check(
            lambda r: (
                {
                    c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"]
                    for c in r.request["InputDataConfig"]
                }
                == {"train": "s3://distinct-data/train/", "validation": "s3://distinct-data/val/"}
            )
        ),
    ),
    "distribution": Case(
        fixed(
            {
                "distribution": {
                    "mpi": {
                        "enabled": True,
                        "processes_per_host": 3,
                        "custom_mpi_options": "-x DISTINCT=1",
                    },
                    "instance_groups": ["gpu"],
                }
            }
        ),
        _check(
            lambda r: (
                r.hyperparameters["sagemaker_mpi_enabled"] is True
                and r.hyperparameters["sagemaker_mpi_num_of_processes_per_host"] == 3
                and r.hyperparameters["sagemaker_mpi_custom_mpi_options"] == "-x DISTINCT=1"
            )
        ),
    ),
    "smddp_collective": Case(
        fixed(
            {
                **PYTORCH_22,
                "distribution": {"pytorchddp": {"enabled": True}, "instance_groups": ["gpu"]},
                "smddp_collective": "AllGather",
            }
        ),
        _check(lambda r: r.request["Environment"] == {"SMDATAPARALLEL_OPTIMIZE_SDP": "true"}),
    ),
    "hyperparameters": Case(
        fixed({"hyperparameters": {"distinct": 7}}),
        _check(lambda r: r.hyperparameters["distinct"] == 7 and "epochs" not in r.hyperparameters),
    ),
    "environment": Case(
        fixed({"environment": {"DISTINCT": "value"}}),
        _check(lambda r: r.request["Environment"] == {"DISTINCT": "value"}),
    ),
    "subnets": Case(
        fixed({"subnets": ["subnet-0distinct1"], "security_group_ids": ["sg-0distinct1"]}),
        _check(lambda r: r.request["VpcConfig"]["Subnets"] == ["subnet-0distinct1"]),
    ),
    "security_group_ids": Case(
        fixed({"subnets": ["subnet-0distinct1"], "security_group_ids": ["sg-0distinct1"]}),
        _check(lambda r: r.request["VpcConfig"]["SecurityGroupIds"] == ["sg-0distinct1"]),
    ),
    "tags": Case(
        fixed({"tags": [{"Key": "team", "Value": "distinct"}]}),
        _check(lambda r: {"Key": "team", "Value": "distinct"} in r.request["Tags"]),
    ),
    "acknowledgments": Case(
        fixed(
            {
                **PYTORCH_22,
                "instance_groups": [
                    {"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
                    {"name": "gpu", "instance_type": "ml.p3dn.24xlarge", "instance_count": 2},
                ],
                "distribution": {"pytorchddp": {"enabled": True}, "instance_groups": ["gpu"]},
                "acknowledgments": {"LAU-SMDDP-INSTANCE": ACK_REASON},
            }
        ),
        acknowledged,
    ),
    "metric_definitions": Case(
        fixed({"metric_definitions": [{"Name": "distinct:loss", "Regex": "loss=(\\S+)"}]}),
        _check(
            # The spec's own first; the built-in ones (samples/s, data wait) follow.
            lambda r: (
                r.request["AlgorithmSpecification"]["MetricDefinitions"][0]
                == {"Name": "distinct:loss", "Regex": "loss=(\\S+)"}
            )
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_spec_file_field_reaches_the_template_or_is_a_violation(
    name: str, tmp_path: Path
) -> None:
    case = CASES[name]
    changes = case.changes(tmp_path)
    assert name in changes
    if case.violation is not None:
        with pytest.raises(SpecValidationError) as raised:
            synthesize(tmp_path, changes)
        assert [(v.rule, v.path) for v in raised.value.violations] == [(case.violation, name)]
        return
    result = synthesize(tmp_path, changes)
    assert case.check is not None
    case.check(result)


def test_a_base_job_name_and_another_job_name_prefix_are_a_violation(tmp_path: Path) -> None:
    """Both name the prefix of every job name: one of them would be ignored."""
    data = json.loads(EXAMPLE.read_text())
    data["source_dir"] = str(REPO / "examples" / "hetero_training")
    data["base_job_name"] = "nightly"
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    stack = cdk.Stack(cdk.App(), "Prefix", env=cdk.Environment(region=REGION))
    with pytest.raises(SpecValidationError) as raised:
        HeterogeneousTrainingJob.from_spec_file(stack, "Job", path, job_name_prefix="weekly")
    assert [(v.rule, v.path, v.value) for v in raised.value.violations] == [
        ("CDK-BASE-JOB-NAME", "base_job_name", "nightly")
    ]
    assert "Prefix/Job" in str(raised.value)
    same = HeterogeneousTrainingJob.from_spec_file(stack, "Same", path, job_name_prefix="nightly")
    assert same.job_name_prefix == "nightly"


@pytest.mark.parametrize(
    ("base_job_name", "rule"),
    [
        ("training_job_name_prefix", "API-JOB-NAME"),  # seed 000's: the API's pattern refuses it
        ("-lead", "API-JOB-NAME"),
        ("", "API-JOB-NAME"),
        ("a" * 41, "CDK-BASE-JOB-NAME"),  # a job name the API takes, too long for a prefix
    ],
)
def test_a_base_job_name_that_cannot_be_the_prefix_is_one_violation_at_its_path(
    tmp_path: Path, base_job_name: str, rule: str
) -> None:
    """Never the prefix prop's ValueError: the spec file's own field, once, with its rule."""
    data = json.loads(EXAMPLE.read_text())
    data["source_dir"] = str(REPO / "examples" / "hetero_training")
    data["base_job_name"] = base_job_name
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    stack = cdk.Stack(cdk.App(), "Prefix", env=cdk.Environment(region=REGION))
    with pytest.raises(SpecValidationError) as raised:
        HeterogeneousTrainingJob.from_spec_file(stack, "Job", path)
    assert [(v.rule, v.path) for v in raised.value.violations] == [(rule, "base_job_name")]


# -- Nested keys: keys of the mappings a spec file nests, honoured or a violation ----------


TF_213 = {"framework": "tensorflow", "framework_version": "2.13.0", "py_version": "py310"}
# What each launcher needs besides itself to be valid (its framework, version, cluster).
LAUNCHER_NEEDS: dict[str, dict[str, Any]] = {
    "torch_distributed": {},
    "pytorchddp": PYTORCH_22,
    "smdistributed.dataparallel": PYTORCH_22,
    "mpi": {},
    "parameter_server": {**TF_213, **HOMOGENEOUS, "instance_type": "ml.p4d.24xlarge"},
    "multi_worker_mirrored_strategy": {**TF_213, **HOMOGENEOUS, "instance_type": "ml.p4d.24xlarge"},
    "pytorchxla": {},
}
# The hyperparameter that tells the toolkit to run the launcher.
LAUNCHER_ENABLED = {
    "torch_distributed": "sagemaker_torch_distributed_enabled",
    "pytorchddp": "sagemaker_distributed_dataparallel_enabled",
    "smdistributed.dataparallel": "sagemaker_distributed_dataparallel_enabled",
    "mpi": "sagemaker_mpi_enabled",
    "parameter_server": "sagemaker_parameter_server_enabled",
    "multi_worker_mirrored_strategy": "sagemaker_multi_worker_mirrored_strategy_enabled",
}
MPI_OPTIONS = "-x DISTINCT=1 --bind-to none"
TRAIN = "s3://my-training-bucket/datasets/train/"
MODEL_PARALLEL = {"partitions": 2, "microbatches": 4, "pipeline": "interleaved"}


def launcher(kind: str, *, disabled: str | None = None, **options: Any) -> dict[str, Any]:
    """The example with ``kind`` as its launcher (and ``disabled`` written, but disabled)."""
    needs = LAUNCHER_NEEDS[kind]
    distribution: dict[str, Any] = {}
    for name, entry in ((kind, {"enabled": True, **options}), (disabled, {"enabled": False})):
        if name is not None:
            first, _, second = name.partition(".")
            distribution.setdefault(first, {}).update({second: entry} if second else entry)
    if "instance_type" not in needs:
        distribution["instance_groups"] = ["gpu"]
    return {**needs, "distribution": distribution}


def channel(**options: Any) -> dict[str, Any]:
    """The example's train channel with ``options`` (``s3_uri=None`` leaves it out)."""
    entry = {"s3_uri": TRAIN, "instance_groups": ["data"], **options}
    return {"channels": {"train": {k: v for k, v in entry.items() if v is not None}}}


def groups(**gpu: Any) -> dict[str, Any]:
    """The example's two groups, the GPU group's keys replaced by ``gpu``."""
    return {
        "instance_groups": [
            {"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
            {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2, **gpu},
        ]
    }


def model_parallel(**options: Any) -> dict[str, Any]:
    """Model parallel v1 under mpi on the GPU group."""
    return {
        **PYTORCH_22,
        "distribution": {
            "smdistributed": {"modelparallel": {"enabled": True, **options}},
            "mpi": {"enabled": True, "processes_per_host": 8},
            "instance_groups": ["gpu"],
        },
    }


@dataclass(frozen=True)
class Nested:
    """A nested key's distinctive value, written into the example, and where it must show."""

    changes: dict[str, Any]  # top-level keys of the example replaced (None: removed)
    check: Callable[[Synthesized], None] | None = None
    # or the rules and paths that refuse it
    violations: tuple[tuple[str, str], ...] = ()


def _hyperparameter(name: str, value: Any) -> Callable[[Synthesized], None]:
    def check(result: Synthesized) -> None:
        assert result.hyperparameters.get(name, "<absent>") == value

    return check


def _channel_field(field: str, value: Any) -> Callable[[Synthesized], None]:
    """``field`` of the train channel in InputDataConfig (dotted: under DataSource)."""

    def check(result: Synthesized) -> None:
        (train,) = (c for c in result.request["InputDataConfig"] if c["ChannelName"] == "train")
        found: Any = train
        for part in field.split("."):
            found = found.get(part, "<absent>") if isinstance(found, dict) else "<absent>"
        assert found == value, train

    return check


def _gpu_group(result: Synthesized, request: dict[str, Any] | None = None) -> dict[str, Any]:
    (gpu,) = (
        g
        for g in (request or result.request)["ResourceConfig"]["InstanceGroups"]
        if g["InstanceGroupName"] != "data"
    )
    return gpu  # type: ignore[no-any-return]


def create_training_job_types(result: Synthesized) -> list[str]:
    """The instance types IAM lets the control role create jobs with."""
    (create,) = (
        s
        for s in policy_statements(result.template, "JobTaskControlRole")
        if s["Action"] == "sagemaker:CreateTrainingJob"
    )
    return create["Condition"]["ForAllValues:StringEquals"]["sagemaker:InstanceTypes"]  # type: ignore[no-any-return]


def launcher_enabled(kind: str, other: str) -> Callable[[Synthesized], None]:
    """The launcher runs; the one written with ``enabled: false`` does not."""

    def check(result: Synthesized) -> None:
        assert result.hyperparameters[LAUNCHER_ENABLED[kind]] is True
        assert LAUNCHER_ENABLED[other] not in result.hyperparameters
        assert other not in json.dumps(result.payload["spec"].get("distribution"))

    return check


def fallback_runs(instance_type: str, count: int) -> Callable[[Synthesized], None]:
    """The declared group runs first; after a capacity failure the fallback runs."""

    def check(result: Synthesized) -> None:
        assert _gpu_group(result)["InstanceType"] == "ml.p4d.24xlarge"
        assert _gpu_group(result, result.variant_request(1)) == {
            "InstanceGroupName": "gpu",
            "InstanceType": instance_type,
            "InstanceCount": count,
        }
        assert instance_type in create_training_job_types(result)

    return check


def _launcher_cases() -> dict[str, Nested]:
    cases: dict[str, Nested] = {}
    for kind in (k.value for k in Launcher):
        path = f"distribution.{kind}"
        other = "torch_distributed" if kind == "mpi" else "mpi"
        if kind == "pytorchxla":  # never offered: refused, and so are its options
            refused = ("LAU-PYTORCH-XLA", path)
            cases[f"{path}.enabled"] = Nested(launcher(kind), violations=(refused,))
            cases[f"{path}.processes_per_host"] = Nested(
                launcher(kind, processes_per_host=3),
                violations=(("LAU-PROCESSES-PER-HOST", f"{path}.processes_per_host"), refused),
            )
            cases[f"{path}.custom_mpi_options"] = Nested(
                launcher(kind, custom_mpi_options=MPI_OPTIONS),
                violations=(("LAU-MPI-OPTIONS", f"{path}.custom_mpi_options"), refused),
            )
            continue
        cases[f"{path}.enabled"] = Nested(
            launcher(kind, disabled=other), launcher_enabled(kind, other)
        )
        if kind in ("parameter_server", "multi_worker_mirrored_strategy"):
            processes = Nested(
                launcher(kind, processes_per_host=3),
                violations=(("LAU-PROCESSES-PER-HOST", f"{path}.processes_per_host"),),
            )
        else:
            processes = Nested(
                launcher(kind, processes_per_host=3),
                _hyperparameter("sagemaker_mpi_num_of_processes_per_host", 3),
            )
        cases[f"{path}.processes_per_host"] = processes
        if kind == "mpi":
            options = Nested(
                launcher(kind, custom_mpi_options=MPI_OPTIONS),
                _hyperparameter("sagemaker_mpi_custom_mpi_options", MPI_OPTIONS),
            )
        elif kind in ("pytorchddp", "smdistributed.dataparallel"):
            options = Nested(
                launcher(kind, custom_mpi_options=MPI_OPTIONS),
                _hyperparameter(
                    "sagemaker_distributed_dataparallel_custom_mpi_options", MPI_OPTIONS
                ),
            )
        else:
            options = Nested(
                launcher(kind, custom_mpi_options=MPI_OPTIONS),
                violations=(("LAU-MPI-OPTIONS", f"{path}.custom_mpi_options"),),
            )
        cases[f"{path}.custom_mpi_options"] = options
    return cases


NESTED_CASES: dict[str, Nested] = {
    # instance_groups[]
    "instance_groups[].name": Nested(
        {
            **groups(name="distinct-gpu"),
            "distribution": {
                "torch_distributed": {"enabled": True},
                "instance_groups": ["distinct-gpu"],
            },
        },
        _check(
            lambda r: (
                [g["InstanceGroupName"] for g in r.request["ResourceConfig"]["InstanceGroups"]]
                == ["data", "distinct-gpu"]
            )
        ),
    ),
    "instance_groups[].instance_type": Nested(
        groups(instance_type="ml.p4de.24xlarge"),
        _check(lambda r: _gpu_group(r)["InstanceType"] == "ml.p4de.24xlarge"),
    ),
    "instance_groups[].instance_count": Nested(
        groups(instance_count=5), _check(lambda r: _gpu_group(r)["InstanceCount"] == 5)
    ),
    "instance_groups[].fallbacks": Nested(
        groups(fallbacks=[{"instance_type": "ml.p4de.24xlarge", "instance_count": 3}]),
        fallback_runs("ml.p4de.24xlarge", 3),
    ),
    # instance_groups[].fallbacks[]
    "instance_groups[].fallbacks[].instance_type": Nested(
        groups(fallbacks=[{"instance_type": "ml.p4de.24xlarge", "instance_count": 2}]),
        fallback_runs("ml.p4de.24xlarge", 2),
    ),
    "instance_groups[].fallbacks[].instance_count": Nested(
        groups(fallbacks=[{"instance_type": "ml.p4d.24xlarge", "instance_count": 5}]),
        fallback_runs("ml.p4d.24xlarge", 5),
    ),
    # channels.<name>
    "channels.<name>.s3_uri": Nested(
        channel(s3_uri="s3://distinct-data/train/"),
        _channel_field("DataSource.S3DataSource.S3Uri", "s3://distinct-data/train/"),
    ),
    "channels.<name>.s3_data": Nested(  # the SDK's name for s3_uri
        channel(s3_uri=None, s3_data="s3://distinct-data/sdk/"),
        _channel_field("DataSource.S3DataSource.S3Uri", "s3://distinct-data/sdk/"),
    ),
    "channels.<name>.s3_data_type": Nested(
        channel(s3_data_type="ManifestFile"),
        _channel_field("DataSource.S3DataSource.S3DataType", "ManifestFile"),
    ),
    "channels.<name>.distribution": Nested(
        channel(distribution="ShardedByS3Key"),
        _channel_field("DataSource.S3DataSource.S3DataDistributionType", "ShardedByS3Key"),
    ),
    "channels.<name>.input_mode": Nested(
        channel(input_mode="FastFile"), _channel_field("InputMode", "FastFile")
    ),
    "channels.<name>.instance_groups": Nested(
        channel(instance_groups=["gpu"]),
        _channel_field("DataSource.S3DataSource.InstanceGroupNames", ["gpu"]),
    ),
    "channels.<name>.content_type": Nested(
        channel(content_type="application/x-distinct"),
        _channel_field("ContentType", "application/x-distinct"),
    ),
    "channels.<name>.compression": Nested(
        channel(compression="Gzip"), _channel_field("CompressionType", "Gzip")
    ),
    "channels.<name>.record_wrapping": Nested(
        channel(record_wrapping="RecordIO"), _channel_field("RecordWrapperType", "RecordIO")
    ),
    # distribution: each launcher key starts its launcher; instance_groups names the group
    **{
        f"distribution.{kind}": (
            Nested(launcher(kind), violations=(("LAU-PYTORCH-XLA", f"distribution.{kind}"),))
            if kind == "pytorchxla"
            else Nested(launcher(kind), _hyperparameter(LAUNCHER_ENABLED[kind], True))
        )
        for kind in (k.value for k in Launcher)
        if "." not in kind
    },
    "distribution.smdistributed": Nested(
        launcher("smdistributed.dataparallel"),
        _hyperparameter("sagemaker_distributed_dataparallel_enabled", True),
    ),
    "distribution.instance_groups": Nested(
        {
            "instance_groups": [
                {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
                {"name": "distinct", "instance_type": "ml.p4d.24xlarge", "instance_count": 1},
            ],
            "channels": {"train": TRAIN},
            "distribution": {
                "torch_distributed": {"enabled": True},
                "instance_groups": ["distinct"],
            },
        },
        _hyperparameter("sagemaker_distribution_instance_groups", ["distinct"]),
    ),
    # distribution.smdistributed
    "distribution.smdistributed.dataparallel": Nested(
        launcher("smdistributed.dataparallel"),
        _hyperparameter("sagemaker_instance_type", "ml.p4d.24xlarge"),
    ),
    "distribution.smdistributed.modelparallel": Nested(
        model_parallel(parameters=MODEL_PARALLEL),
        _hyperparameter("mp_parameters", MODEL_PARALLEL),
    ),
    # distribution.smdistributed.modelparallel
    "distribution.smdistributed.modelparallel.enabled": Nested(
        model_parallel(), _hyperparameter("mp_parameters", {})
    ),
    "distribution.smdistributed.modelparallel.parameters": Nested(
        model_parallel(parameters={**MODEL_PARALLEL, "partitions": 4}),
        _hyperparameter("mp_parameters", {**MODEL_PARALLEL, "partitions": 4}),
    ),
    # distribution.<launcher>
    **_launcher_cases(),
    # tags[]
    "tags[].Key": Nested(
        {"tags": [{"Key": "distinct-key", "Value": "v"}]},
        _check(lambda r: {"Key": "distinct-key", "Value": "v"} in r.request["Tags"]),
    ),
    "tags[].Value": Nested(
        {"tags": [{"Key": "team", "Value": "distinct-value"}]},
        _check(lambda r: {"Key": "team", "Value": "distinct-value"} in r.request["Tags"]),
    ),
    # metric_definitions[]
    "metric_definitions[].Name": Nested(
        {"metric_definitions": [{"Name": "distinct:name", "Regex": "x=(\\S+)"}]},
        _check(
            lambda r: (
                r.request["AlgorithmSpecification"]["MetricDefinitions"][0]["Name"]
                == "distinct:name"
            )
        ),
    ),
    "metric_definitions[].Regex": Nested(
        {"metric_definitions": [{"Name": "loss", "Regex": "distinct=(\\d+)"}]},
        _check(
            lambda r: (
                r.request["AlgorithmSpecification"]["MetricDefinitions"][0]["Regex"]
                == "distinct=(\\d+)"
            )
        ),
    ),
}


def _keys(data: Any) -> set[str]:
    """Every mapping key written anywhere in ``data``."""
    if isinstance(data, dict):
        return set(data) | {k for value in data.values() for k in _keys(value)}
    if isinstance(data, list):
        return {k for item in data for k in _keys(item)}
    return set()


@pytest.mark.parametrize("name", sorted(NESTED_CASES))
def test_a_nested_spec_file_key_reaches_the_template_or_is_a_violation(
    name: str, tmp_path: Path
) -> None:
    case = NESTED_CASES[name]
    assert name.rsplit(".", 1)[1] in _keys(case.changes)  # the case writes its key
    if case.violations:
        with pytest.raises(SpecValidationError) as raised:
            synthesize(tmp_path, case.changes)
        found = {(v.rule, v.path) for v in raised.value.violations}
        assert found == set(case.violations)
        return
    result = synthesize(tmp_path, case.changes)
    assert case.check is not None
    case.check(result)
