"""The examples of the seed documents, as spec files, with the verdict the rules give each.

Seed 000: PyTorch/TensorFlow estimators with SMDDP launchers. Seed 002: heterogeneous clusters.
Placeholders in the seeds (``'x.y.z'``, ``'pyxy'``, ``...``) are filled with the documented
minimum or a release that exists; the role name is given as the ARN the API needs.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.specs import ROLE, violations_of

COMMON = {"role": ROLE, "region": "us-west-2", "output_path": "s3://bucket/output"}


def seed000_pytorch(distribution: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """Seed 000's PyTorch estimator."""
    return {
        **COMMON,
        "framework": "pytorch",
        "base_job_name": "training_job_name_prefix",
        "entry_point": "adapted-training-script.py",
        "py_version": "py310",
        "framework_version": "2.0.1",
        "instance_count": 2,
        "instance_type": "ml.p4d.24xlarge",
        "distribution": distribution,
        "channels": {"training": "s3://bucket/path/to/training/data"},
        **extra,
    }


SEED000_TF = {
    **COMMON,
    "framework": "tensorflow",
    "base_job_name": "training_job_name_prefix",
    "entry_point": "adapted-training-script.py",
    "framework_version": "2.11.0",
    "py_version": "py38",
    "instance_count": 2,
    "instance_type": "ml.p3.16xlarge",
    "distribution": {"smdistributed": {"dataparallel": {"enabled": True}}},
}

GROUPS_002_FIRST = [
    {"name": "instance_group_1", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
    {"name": "instance_group_2", "instance_type": "ml.p3dn.24xlarge", "instance_count": 1},
]
GROUPS_002_DISTRIBUTED = [
    {"name": "instance_group_1", "instance_type": "ml.c5.18xlarge", "instance_count": 1},
    {"name": "instance_group_2", "instance_type": "ml.p3dn.24xlarge", "instance_count": 2},
]
CHANNELS_002 = {
    "training": {
        "s3_data_type": "S3Prefix",
        "s3_data": "s3://your-training-data-storage/folder1",
        "distribution": "FullyReplicated",
        "input_mode": "File",
        "instance_groups": ["instance_group_1"],
    },
    "dummy-input-channel": {
        "s3_data_type": "S3Prefix",
        "s3_data": "s3://your-training-data-storage/folder2",
        "distribution": "FullyReplicated",
        "input_mode": "File",
        "instance_groups": ["instance_group_2"],
    },
}
PT_110 = {"framework": "pytorch", "framework_version": "1.10.0", "py_version": "py38"}
TF_26 = {"framework": "tensorflow", "framework_version": "2.6.0", "py_version": "py38"}
TF_211 = {"framework": "tensorflow", "framework_version": "2.11.0", "py_version": "py39"}


def seed002(
    framework: dict[str, Any], groups: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    return {
        **COMMON,
        **framework,
        "entry_point": "my-training-script.py",
        "job_name": "my-training-job-with-heterogeneous-cluster",
        "instance_groups": groups,
        **extra,
    }


ON = {"enabled": True}
MPI_ON_GROUP_2 = {
    "mpi": {"enabled": True, "processes_per_host": 8},
    "instance_groups": ["instance_group_2"],
}
MODEL_PARALLEL = {
    "smdistributed": {"modelparallel": {"enabled": True, "parameters": {}}},
    "instance_groups": ["instance_group_2"],
}

# (example, spec, rules that fire, why)
EXAMPLES: list[tuple[str, dict[str, Any], set[str], str]] = [
    (
        "000 PyTorch pytorchddp",
        seed000_pytorch({"pytorchddp": ON}),
        {"API-JOB-NAME"},
        "the seed's base_job_name 'training_job_name_prefix' has underscores, which the "
        "TrainingJobName pattern refuses; the SDK would only fail at CreateTrainingJob",
    ),
    (
        "000 PyTorch pytorchddp, valid name",
        seed000_pytorch({"pytorchddp": ON}, base_job_name="training-job-name-prefix"),
        set(),
        "pytorchddp on ml.p4d.24xlarge with PyTorch 2.0.1: SMDDP supports both",
    ),
    (
        "000 PyTorch torch_distributed",
        seed000_pytorch({"torch_distributed": ON}, base_job_name="prefix"),
        set(),
        "torchrun on GPUs with PyTorch 2.0.1 (in the torch_distributed list)",
    ),
    (
        "000 PyTorch smdistributed",
        seed000_pytorch({"smdistributed": {"dataparallel": ON}}, base_job_name="prefix"),
        set(),
        "smddprun on ml.p4d.24xlarge",
    ),
    (
        "000 pytorchddp with custom MPI options",
        seed000_pytorch(
            {
                "pytorchddp": {
                    "enabled": True,
                    "custom_mpi_options": "-verbose -x NCCL_DEBUG=VERSION",
                }
            },
            base_job_name="prefix",
        ),
        set(),
        "custom_mpi_options belongs to an mpirun-based launcher",
    ),
    (
        "000 smdistributed with custom MPI options",
        seed000_pytorch(
            {
                "smdistributed": {
                    "dataparallel": {
                        "enabled": True,
                        "custom_mpi_options": "-verbose -x NCCL_DEBUG=VERSION",
                    }
                }
            },
            base_job_name="prefix",
        ),
        set(),
        "custom_mpi_options belongs to an mpirun-based launcher",
    ),
    (
        "000 SMDDP AllReduce under torch_distributed",
        seed000_pytorch(
            {"torch_distributed": ON}, base_job_name="prefix", smddp_collective="AllReduce"
        ),
        {"COL-ALLREDUCE-MPIRUN"},
        "'if you replace NCCL AllReduce with SMDDP AllReduce, choose an mpirun-based option'",
    ),
    (
        "000 SMDDP AllGather under pytorchddp",
        seed000_pytorch({"pytorchddp": ON}, base_job_name="prefix", smddp_collective="AllGather"),
        set(),
        "AllGather works with all three launchers (the job gets SMDATAPARALLEL_OPTIMIZE_SDP)",
    ),
    (
        "000 TensorFlow smdistributed",
        SEED000_TF,
        {"API-JOB-NAME", "FW-PY-VERSION"},
        "the same base_job_name, and TensorFlow 2.11.0's container is built for py39, not the "
        "seed's py38",
    ),
    (
        "000 TensorFlow smdistributed, py39",
        {**SEED000_TF, "py_version": "py39", "base_job_name": "prefix"},
        set(),
        "ml.p3.16xlarge is an SMDDP type for TensorFlow; 2.11.0 is the last TF with SMDDP",
    ),
    (
        "002 PyTorch groups and channels",
        seed002(PT_110, GROUPS_002_FIRST, channels=CHANNELS_002),
        set(),
        "every channel is scoped to an existing group; PyTorch 1.10 is the documented minimum",
    ),
    (
        "002 TensorFlow groups and channels",
        seed002(TF_26, GROUPS_002_FIRST, channels=CHANNELS_002),
        set(),
        "TensorFlow 2.6 is the documented minimum",
    ),
    (
        "002 PyTorch 1.9 would be too old",
        seed002({**PT_110, "framework_version": "1.9.1"}, GROUPS_002_FIRST, channels=CHANNELS_002),
        {"HC-FRAMEWORK-VERSION"},
        "heterogeneous clusters need PyTorch 1.10 or later",
    ),
    (
        "002 PyTorch MPI on instance_group_2",
        seed002(
            PT_110,
            GROUPS_002_DISTRIBUTED,
            distribution=MPI_ON_GROUP_2,
        ),
        set(),
        "MPI scoped to the one GPU group",
    ),
    (
        "002 TensorFlow MPI on instance_group_2",
        seed002(
            TF_26,
            GROUPS_002_DISTRIBUTED,
            distribution=MPI_ON_GROUP_2,
        ),
        set(),
        "MPI scoped to the one GPU group",
    ),
    (
        "002 PyTorch SMDDP on ml.p3dn.24xlarge",
        seed002(
            PT_110,
            GROUPS_002_DISTRIBUTED,
            distribution={
                "smdistributed": {"dataparallel": ON},
                "instance_groups": ["instance_group_2"],
            },
        ),
        {"LAU-SMDDP-INSTANCE"},
        "the seed itself says the group must use SMDDP-supported types; for PyTorch those are "
        "ml.p4d.24xlarge and ml.p4de.24xlarge, not ml.p3dn.24xlarge",
    ),
    (
        "002 TensorFlow SMDDP on ml.p3dn.24xlarge",
        seed002(
            TF_211,
            GROUPS_002_DISTRIBUTED,
            distribution={
                "smdistributed": {"dataparallel": ON},
                "instance_groups": ["instance_group_2"],
            },
        ),
        set(),
        "ml.p3dn.24xlarge is an SMDDP type for TensorFlow (2.6 to 2.11)",
    ),
    (
        "002 PyTorch model parallel",
        seed002(PT_110, GROUPS_002_DISTRIBUTED, distribution=MODEL_PARALLEL),
        {"LAU-MODEL-PARALLEL-LAUNCHER", "HC-DISTRIBUTION-GROUPS-NEED-CLUSTER"},
        "the seed enables modelparallel without a launcher: the toolkit would start plain python, "
        "the library would never initialise, and the named group has nothing to run; add mpi (v1)",
    ),
    (
        "002 TensorFlow model parallel",
        seed002(TF_26, GROUPS_002_DISTRIBUTED, distribution=MODEL_PARALLEL),
        {"LAU-MODEL-PARALLEL-LAUNCHER", "HC-DISTRIBUTION-GROUPS-NEED-CLUSTER"},
        "as for PyTorch",
    ),
    (
        "002 model parallel with mpi",
        seed002(
            PT_110,
            GROUPS_002_DISTRIBUTED,
            distribution={**MODEL_PARALLEL, "mpi": {"enabled": True, "processes_per_host": 8}},
        ),
        set(),
        "model parallel v1 under mpi on the GPU group",
    ),
    (
        "002 no group named on two groups",
        seed002(
            PT_110,
            GROUPS_002_DISTRIBUTED,
            distribution={"mpi": {"enabled": True, "processes_per_host": 8}},
        ),
        {"HC-DISTRIBUTION-GROUP-COUNT"},
        "'only one instance group ... can be specified to the distribution configuration', and "
        "with two groups it must be named",
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [pytest.param(spec, expected, id=name) for name, spec, expected, _ in EXAMPLES],
)
def test_seed_example_verdict(spec: dict[str, Any], expected: set[str]) -> None:
    assert {v.rule for v in violations_of(spec)} == expected
