"""Each rule has at least one spec that breaks it and one fully valid spec near that edge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.checks.registry import RULES, rule_by_id
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.file.reader import spec_from_dict
from tests.core.specs import DELETE, HOMOGENEOUS, spec_dict, violations_of, with_gpu_group

ON = {"enabled": True}
DDP_22 = {"framework_version": "2.2.0", "py_version": "py310"}
TF_213 = {"framework": "tensorflow", "framework_version": "2.13.0", "py_version": "py310"}
MP_PARAMS = {"partitions": 2, "microbatches": 4}


def mp(extra: dict[str, Any] | None = None, **launchers: Any) -> dict[str, Any]:
    modelparallel = {"enabled": True, "parameters": {**MP_PARAMS, **(extra or {})}}
    return {
        "distribution": {
            "smdistributed": {"modelparallel": modelparallel},
            **launchers,
            "instance_groups": ["gpu"],
        }
    }


def dist(**launchers: Any) -> dict[str, Any]:
    return {"distribution": {**launchers, "instance_groups": ["gpu"]}}


# rule id -> (failing specs, passing specs). Every passing spec is fully valid.
CASES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "LAU-ONE-LAUNCHER": (
        [dist(mpi=ON, torch_distributed=ON)],
        [dist(mpi=ON)],
    ),
    "LAU-PYTORCHDDP-SMDISTRIBUTED": (
        [spec_dict(DDP_22, dist(pytorchddp=ON, smdistributed={"dataparallel": ON}))],
        [spec_dict(DDP_22, dist(pytorchddp=ON))],
    ),
    "LAU-FRAMEWORK": (
        [spec_dict(TF_213, HOMOGENEOUS, {"instance_type": "ml.p3.16xlarge"})],
        [
            spec_dict(
                TF_213,
                HOMOGENEOUS,
                {
                    "instance_type": "ml.p3.16xlarge",
                    "distribution": {"multi_worker_mirrored_strategy": ON},
                },
            )
        ],
    ),
    "LAU-TORCH-DISTRIBUTED-INSTANCE": (
        [{"distribution": {"torch_distributed": ON, "instance_groups": ["data"]}}],
        [{}],
    ),
    "LAU-TORCH-DISTRIBUTED-VERSION": (
        [
            {"framework_version": "2.4.0"},
            spec_dict(with_gpu_group("ml.trn1.32xlarge"), {"image_uri": DELETE}),
            {"py_version": "py2", "framework_version": "1.13.1"},
        ],
        [
            {"framework_version": "2.8.0", "py_version": "py312"},
            {"framework_version": "2.2", "py_version": "py310"},
        ],  # alias of 2.2.0
    ),
    "LAU-TORCH-DISTRIBUTED-ENTRY-POINT": (
        [{"entry_point": "train.sh"}, {"source_dir": "<package>"}],
        [{"source_dir": "<scripts>"}],
    ),
    "LAU-SMDDP-INSTANCE": (
        [
            spec_dict(DDP_22, with_gpu_group("ml.p3.16xlarge"), dist(pytorchddp=ON)),
            spec_dict(
                DDP_22, with_gpu_group("ml.p5.48xlarge"), dist(smdistributed={"dataparallel": ON})
            ),
        ],
        [
            spec_dict(DDP_22, with_gpu_group("ml.p4de.24xlarge"), dist(pytorchddp=ON)),
            spec_dict(
                {"framework": "tensorflow", "framework_version": "2.11.0", "py_version": "py39"},
                with_gpu_group("ml.p3dn.24xlarge"),
                dist(smdistributed={"dataparallel": ON}),
            ),
        ],
    ),
    "LAU-SMDDP-VERSION": (
        [
            dist(pytorchddp=ON),
            spec_dict(
                TF_213, with_gpu_group("ml.p4d.24xlarge"), dist(smdistributed={"dataparallel": ON})
            ),
        ],
        [spec_dict(DDP_22, dist(pytorchddp=ON))],
    ),
    "LAU-MPI-OPTIONS": (
        [dist(torch_distributed={"enabled": True, "custom_mpi_options": "-verbose"})],
        [
            dist(mpi={"enabled": True, "custom_mpi_options": "-verbose -x NCCL_DEBUG=INFO"}),
            spec_dict(DDP_22, dist(pytorchddp={"enabled": True, "custom_mpi_options": "-verbose"})),
        ],
    ),
    "LAU-PROCESSES-PER-HOST": (
        [
            dist(mpi={"enabled": True, "processes_per_host": 0}),
            spec_dict(
                TF_213,
                HOMOGENEOUS,
                {
                    "instance_type": "ml.p3.16xlarge",
                    "distribution": {
                        "multi_worker_mirrored_strategy": {"enabled": True, "processes_per_host": 2}
                    },
                },
            ),
        ],
        [
            dist(mpi={"enabled": True, "processes_per_host": 8}),
            dist(torch_distributed={"enabled": True, "processes_per_host": 8}),
        ],
    ),
    "LAU-MODEL-PARALLEL-LAUNCHER": (
        [mp(), spec_dict(DDP_22, dist(smdistributed={"dataparallel": ON, "modelparallel": ON}))],
        [mp(mpi={"enabled": True, "processes_per_host": 8})],
    ),
    "LAU-MODEL-PARALLEL-PARAMETERS": (
        [
            mp({"partitions": 0}, mpi=ON),
            mp({"pipeline": "fast"}, mpi=ON),
            mp({"auto_partition": False}, mpi=ON),
            mp({"auto_partition": False, "default_partition": 2}, mpi=ON),
            mp({"memory_weight": 1.5}, mpi=ON),
            mp({"ddp_port": 1}, mpi=ON),
            mp({"horovod": True, "ddp": True}, mpi=ON),
            mp({"contiguous": "yes"}, mpi=ON),
            mp({"partition_file": 3}, mpi=ON),
            mp({"ddp": True, "ddp_port": -1}, mpi=ON),
        ],
        [
            mp(
                {
                    "pipeline": "interleaved",
                    "auto_partition": False,
                    "default_partition": 1,
                    "memory_weight": 0.5,
                    "ddp": True,
                    "ddp_port": 1234,
                },
                mpi=ON,
            )
        ],
    ),
    "LAU-MODEL-PARALLEL-P5": (
        [spec_dict(with_gpu_group("ml.p5.48xlarge"), mp(mpi=ON))],
        [spec_dict(with_gpu_group("ml.p4d.24xlarge"), mp(mpi=ON))],
    ),
    "LAU-MODEL-PARALLEL-V2-IMAGE": (
        [
            spec_dict(
                HOMOGENEOUS,
                {
                    "distribution": {
                        "torch_distributed": ON,
                        "smdistributed": {"modelparallel": {"enabled": True}},
                    }
                },
            )
        ],
        [
            spec_dict(
                HOMOGENEOUS,
                {
                    "image_uri": "658645717510.dkr.ecr.us-west-2.amazonaws.com/"
                    "smdistributed-modelparallel:2.2.0-gpu-py310-cu121",
                    "distribution": {
                        "torch_distributed": ON,
                        "smdistributed": {"modelparallel": {"enabled": True}},
                    },
                },
            )
        ],
    ),
    "LAU-TRAINIUM": (
        [spec_dict(with_gpu_group("ml.trn1.32xlarge"), dist(mpi=ON), {"image_uri": "neuron:1"})],
        [spec_dict(with_gpu_group("ml.trn1.32xlarge"), {"image_uri": "neuron:1"})],
    ),
    "LAU-MWMS-VERSION": (
        [
            spec_dict(
                TF_213,
                HOMOGENEOUS,
                {
                    "framework_version": "2.8.0",
                    "py_version": "py39",
                    "instance_type": "ml.p3.16xlarge",
                    "distribution": {"multi_worker_mirrored_strategy": ON},
                },
            ),
            spec_dict(
                TF_213,
                HOMOGENEOUS,
                {
                    "instance_type": "ml.p3.16xlarge",
                    "distribution": {
                        "multi_worker_mirrored_strategy": ON,
                        "smdistributed": {"modelparallel": ON},
                    },
                },
            ),
        ],
        [
            spec_dict(
                TF_213,
                HOMOGENEOUS,
                {
                    "instance_type": "ml.p3.16xlarge",
                    "distribution": {"multi_worker_mirrored_strategy": ON},
                },
            )
        ],
    ),
    "LAU-PYTORCH-XLA": (
        [dist(pytorchxla=ON)],
        [{}],
    ),
    "COL-NEEDS-SMDDP-LAUNCHER": (
        [
            spec_dict(dist(mpi=ON), {"smddp_collective": "AllGather"}),
            spec_dict({"smddp_collective": "AllReduce", "distribution": DELETE}),
        ],
        [{"smddp_collective": "AllGather"}],
    ),
    "COL-ALLREDUCE-MPIRUN": (
        [{"smddp_collective": "AllReduce"}],
        [
            spec_dict(DDP_22, dist(pytorchddp=ON), {"smddp_collective": "AllReduce"}),
            spec_dict(
                DDP_22, dist(smdistributed={"dataparallel": ON}), {"smddp_collective": "AllReduce"}
            ),
        ],
    ),
    "COL-EXCLUSIVE": (
        [
            spec_dict(
                DDP_22, dist(pytorchddp=ON), {"smddp_collective": ["AllReduce", "AllGather"]}
            ),
            spec_dict(
                DDP_22,
                dist(pytorchddp=ON),
                {
                    "smddp_collective": "AllReduce",
                    "environment": {"SMDATAPARALLEL_OPTIMIZE_SDP": "true"},
                },
            ),
        ],
        [spec_dict(DDP_22, dist(pytorchddp=ON), {"smddp_collective": "AllGather"})],
    ),
    "COL-INSTANCE": (
        [spec_dict(with_gpu_group("ml.g5.48xlarge"), {"smddp_collective": "AllGather"})],
        [spec_dict(with_gpu_group("ml.g5.48xlarge"))],  # no choice: torchrun keeps NCCL there
    ),
    "HC-GROUPS-OR-TYPE": (
        [{"instance_type": "ml.c5.xlarge"}, spec_dict(HOMOGENEOUS, {"instance_count": DELETE})],
        [spec_dict(HOMOGENEOUS)],
    ),
    "ACK-RULE": (
        [
            {"acknowledgments": {"API-ROLE": "the role is made elsewhere"}},  # an error
            {"acknowledgments": {"LAU-NO-SUCH-RULE": "a reason long enough"}},
            {"acknowledgments": {"HC-FRAMEWORK-VERSION": "ok"}},  # no real reason
        ],
        [{"acknowledgments": {"HC-FRAMEWORK-VERSION": "measured: runs on our 1.9 images"}}],
    ),
    "RUN-TAGS": (
        [
            {"tags": {"hetero-constructs:attempt": "7"}},
            {"tags": {f"team-{i}": "ml" for i in range(47)}},
        ],
        [{"tags": {f"team-{i}": "ml" for i in range(46)}}],
    ),
    "HC-WARM-POOL": (
        [
            {"keep_alive_period_in_seconds": 600},  # with the base spec's instance groups
            spec_dict(HOMOGENEOUS, {"keep_alive_period_in_seconds": 7200}),
        ],
        [spec_dict(HOMOGENEOUS, {"keep_alive_period_in_seconds": 3600})],
    ),
    "HC-GROUP-COUNT": (
        [
            {
                "instance_groups": [
                    {"name": f"g{i}", "instance_type": "ml.p4d.24xlarge", "instance_count": 1}
                    for i in range(6)
                ],
                "distribution": {"torch_distributed": ON, "instance_groups": ["g0"]},
                "channels": {"train": "s3://bucket/train"},
            }
        ],
        [
            {
                "instance_groups": [
                    {"name": f"g{i}", "instance_type": "ml.p4d.24xlarge", "instance_count": 1}
                    for i in range(5)
                ],
                "distribution": {"torch_distributed": ON, "instance_groups": ["g0"]},
                "channels": {"train": "s3://bucket/train"},
            }
        ],
    ),
    "HC-GROUP-NAMES-UNIQUE": (
        [
            {
                "instance_groups": [
                    {"name": "gpu", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
                    {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
                ],
                "channels": {"train": "s3://bucket/train"},
            }
        ],
        [{}],
    ),
    "HC-INSTANCE-COUNT": (
        [with_gpu_group("ml.p4d.24xlarge", count=0), spec_dict(HOMOGENEOUS, {"instance_count": 0})],
        [with_gpu_group("ml.p4d.24xlarge", count=1)],
    ),
    "HC-DISTRIBUTION-GROUP-COUNT": (
        [
            {"distribution": {"torch_distributed": ON}},
            {"distribution": {"torch_distributed": ON, "instance_groups": ["gpu", "data"]}},
        ],
        [
            spec_dict(
                {
                    "instance_groups": [
                        {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2}
                    ]
                },
                {"distribution": {"torch_distributed": ON}, "channels": {"train": "s3://bkt/t"}},
            )
        ],
    ),
    "HC-DISTRIBUTION-GROUP-EXISTS": (
        [{"distribution": {"torch_distributed": ON, "instance_groups": ["gpus"]}}],
        [{}],
    ),
    "HC-DISTRIBUTION-GROUPS-NEED-CLUSTER": (
        [
            spec_dict(
                HOMOGENEOUS, {"distribution": {"torch_distributed": ON, "instance_groups": ["gpu"]}}
            ),
            {"distribution": {"instance_groups": ["gpu"]}},
        ],
        [{"distribution": DELETE}],
    ),
    "HC-LAUNCHER-SUPPORTED": (
        [
            spec_dict(TF_213, dist(parameter_server=ON)),
            spec_dict(TF_213, dist(multi_worker_mirrored_strategy=ON)),
            spec_dict(
                {"image_uri": "smp:v2"},
                dist(torch_distributed=ON, smdistributed={"modelparallel": ON}),
            ),
        ],
        [
            spec_dict(
                TF_213,
                HOMOGENEOUS,
                {"instance_type": "ml.p3.16xlarge", "distribution": {"parameter_server": ON}},
            )
        ],
    ),
    "HC-FRAMEWORK-VERSION": (
        [
            spec_dict(dist(mpi=ON), {"framework_version": "1.9.1", "py_version": "py38"}),
            spec_dict(
                dist(mpi=ON),
                {"framework": "tensorflow", "framework_version": "2.5.1", "py_version": "py37"},
            ),
        ],
        [
            spec_dict(dist(mpi=ON), {"framework_version": "1.10.2", "py_version": "py38"}),
            spec_dict(
                dist(mpi=ON),
                {"framework": "tensorflow", "framework_version": "2.6.3", "py_version": "py38"},
            ),
        ],
    ),
    "HC-CHANNEL-GROUPS-EXIST": (
        [
            {"channels": {"train": {"s3_uri": "s3://bkt/t", "instance_groups": ["cpu"]}}},
            spec_dict(
                HOMOGENEOUS,
                {"channels": {"train": {"s3_uri": "s3://bkt/t", "instance_groups": ["gpu"]}}},
            ),
        ],
        [{"channels": {"train": {"s3_uri": "s3://bkt/t", "instance_groups": ["data", "gpu"]}}}],
    ),
    "HC-CHANNEL-GROUPS-ALL-OR-NOTHING": (
        [
            {
                "channels": {
                    "train": {"s3_uri": "s3://bkt/t", "instance_groups": ["data"]},
                    "eval": {"s3_uri": "s3://bkt/e"},
                }
            }
        ],
        [
            {
                "channels": {
                    "train": {"s3_uri": "s3://bkt/t", "instance_groups": ["data"]},
                    "eval": {"s3_uri": "s3://bkt/e", "instance_groups": ["gpu"]},
                }
            },
            {"channels": {"train": "s3://bkt/t", "eval": "s3://bkt/e"}},
        ],
    ),
    "HC-CHANNEL-GROUP-LIMIT": (
        [
            {"channels": {"train": {"s3_uri": "s3://bkt/t", "instance_groups": ["data", "data"]}}},
            {"channels": {"train": {"s3_uri": "s3://bkt/t", "instance_groups": ["data"] * 6}}},
        ],
        [{"channels": {"train": {"s3_uri": "s3://bkt/t", "instance_groups": ["data", "gpu"]}}}],
    ),
    "FW-IMAGE-OR-VERSION": (
        [{"framework_version": DELETE}, {"py_version": DELETE}],
        [
            {
                "framework_version": DELETE,
                "py_version": DELETE,
                "image_uri": "111122223333.dkr.ecr.us-west-2.amazonaws.com/custom:latest",
            }
        ],
    ),
    "FW-VERSION": (
        [{"framework_version": "2.9.0"}, {"framework_version": "latest"}],
        [{"framework_version": "2.3"}],
    ),
    "FW-PY-VERSION": (
        [{"py_version": "py310"}],
        [{"framework_version": "2.8.0", "py_version": "py312"}],
    ),
    "FW-REGION": (
        [
            {"region": DELETE},
            {"framework_version": "2.8.0", "py_version": "py312", "region": "us-iso-east-1"},
        ],
        [{"region": "us-iso-east-1"}, {"region": "cn-north-1"}],
    ),
    "FW-TRAINIUM-IMAGE": (
        [with_gpu_group("ml.trn1.32xlarge")],
        [spec_dict(with_gpu_group("ml.trn1.32xlarge"), {"image_uri": "neuron:1"})],
    ),
    "FW-ENTRY-POINT": (
        [
            {"entry_point": "s3://bucket/train.py"},
            {"source_dir": "<scripts>", "entry_point": "/abs/train.py"},
            {"source_dir": "<scripts>", "entry_point": "missing.py"},
        ],
        [{"source_dir": "<scripts>", "entry_point": "train.py"}, {"entry_point": "/jobs/train.py"}],
    ),
    "FW-SOURCE-DIR": (
        [{"source_dir": "s3://bucket/code/"}, {"source_dir": "/does/not/exist"}],
        [{"source_dir": "s3://bucket/code/sourcedir.tar.gz"}, {"source_dir": "s3://bkt/asset.gz"}],
    ),
    "API-INSTANCE-TYPE": (
        [
            with_gpu_group("ml.p4d.24xlarg"),
            spec_dict(HOMOGENEOUS, {"instance_type": "p4d.24xlarge"}),
        ],
        [with_gpu_group("ml.p6-b200.48xlarge")],
    ),
    "API-JOB-NAME": (
        [{"job_name": "bad_name"}, {"job_name": "x" * 64}, {"base_job_name": "-lead"}],
        [{"job_name": "a" * 63}, {"job_name": DELETE, "base_job_name": "nightly"}],
    ),
    "API-GROUP-NAME": (
        [
            {
                "instance_groups": [
                    {"name": "d" * 65, "instance_type": "ml.c5.18xlarge", "instance_count": 1},
                    {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
                ],
                "channels": {"train": "s3://bucket/train"},
            }
        ],
        [
            {
                "instance_groups": [
                    {"name": "d" * 64, "instance_type": "ml.c5.18xlarge", "instance_count": 1},
                    {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
                ],
                "channels": {"train": "s3://bucket/train"},
            }
        ],
    ),
    "API-CHANNELS": (
        [
            {"channels": {f"c{i}": "s3://bkt/x" for i in range(21)}},
            {"channels": {"bad name": "s3://bkt/x"}},
            {"enable_network_isolation": True, "channels": {"code": "s3://bkt/x"}},
            {
                "enable_network_isolation": True,
                "channels": {f"c{i}": "s3://bkt/x" for i in range(20)},
            },
        ],
        [
            {"channels": {f"c{i}": "s3://bkt/x" for i in range(20)}},
            {
                "enable_network_isolation": True,
                "channels": {f"c{i}": "s3://bkt/x" for i in range(19)},
            },
        ],
    ),
    "API-CHANNEL-OPTIONS": (
        [
            {
                "channels": {
                    "train": {
                        "s3_uri": "s3://bkt/t",
                        "instance_groups": ["data"],
                        "distribution": "Sharded",
                    }
                }
            },
            {"input_mode": "Stream"},
            {
                "channels": {
                    "train": {
                        "s3_uri": "s3://bkt/t",
                        "instance_groups": ["data"],
                        "compression": "zip",
                    }
                }
            },
        ],
        [
            {
                "channels": {
                    "train": {
                        "s3_uri": "s3://bkt/t",
                        "instance_groups": ["data"],
                        "distribution": "ShardedByS3Key",
                        "input_mode": "FastFile",
                        "s3_data_type": "ManifestFile",
                        "compression": "Gzip",
                        "record_wrapping": "RecordIO",
                        "content_type": "text/csv",
                    }
                },
                "input_mode": "Pipe",
            }
        ],
    ),
    "API-S3-URI": (
        [
            {"channels": {"train": {"s3_uri": "bucket/train", "instance_groups": ["data"]}}},
            {"output_path": DELETE},
            {"output_path": "ftp://bucket/out"},
            {"checkpoint_s3_uri": "s3:/bucket"},
        ],
        [
            {
                "output_path": "https://bucket.s3.amazonaws.com/out",
                "checkpoint_s3_uri": "s3://bucket/checkpoints",
            }
        ],
    ),
    "API-HYPERPARAMETERS": (
        [
            {"hyperparameters": {f"h{i}": i for i in range(93)}},
            {"hyperparameters": {"sagemaker_program": "x.py"}},
            {"hyperparameters": {"text": "x" * 2500}},
            {"hyperparameters": {"k" * 257: 1}},
        ],
        [
            {"hyperparameters": {f"h{i}": i for i in range(92)}},
            {"hyperparameters": {"text": "x" * 2498, "k" * 256: 1}},
        ],
    ),
    "API-ENVIRONMENT": (
        [
            {"environment": {"1BAD": "x"}},
            {"environment": {"GOOD": "x" * 513}},
            {"environment": {f"V{i}": "x" for i in range(101)}},
        ],
        [{"environment": {"NCCL_DEBUG": "WARN", "_PRIVATE": "x" * 512}}],
    ),
    "API-STOPPING": (
        [
            {"max_run": 2_419_201},
            {"max_run": 0},
            {"max_wait": 90000},
            {"use_spot_instances": True},
            {"use_spot_instances": True, "max_wait": 3600},
        ],
        [
            {"max_run": 2_419_200},
            {
                "use_spot_instances": True,
                "max_wait": 86400,
                "checkpoint_s3_uri": "s3://bucket/ckpt",
            },
        ],
    ),
    "API-S3-BUCKET": (
        [
            {"output_path": "s3://Bad_Bucket!/x"},
            {"channels": {"train": {"s3_uri": "s3://192.168.5.4/t", "instance_groups": ["data"]}}},
            {"checkpoint_s3_uri": "s3://fast--usw2-az1--x-s3/ckpt"},
            {"output_path": "s3://xn--bucket/out"},
            {"output_path": "s3://ab/out"},
            {"output_path": "s3://a..b/out"},
            {"output_path": "s3://bucket-/out"},
            {"source_dir": "s3://my-ap-abc123-s3alias/code/sourcedir.tar.gz"},
        ],
        [
            {
                "output_path": "s3://my.training-bucket-1/out",
                "checkpoint_s3_uri": "s3://amzn-s3-demo1/checkpoints",
                "channels": {"train": {"s3_uri": "s3://b12/t", "instance_groups": ["data"]}},
            }
        ],
    ),
    "API-INT-RANGE": (
        [
            {"volume_size": 2**31},
            {"use_spot_instances": True, "max_wait": 2**31},
            {
                "instance_groups": [
                    {"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2**31},
                    {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
                ]
            },
            {**HOMOGENEOUS, "instance_count": 1e30},
        ],
        [{"volume_size": 2**31 - 1}],
    ),
    "API-RESOURCES": (
        [{"volume_size": 0}, {"max_retry_attempts": 0}, {"max_retry_attempts": 31}],
        [{"volume_size": 1, "max_retry_attempts": 30}],
    ),
    "API-NETWORK": (
        [
            {"subnets": ["subnet-0abc"]},
            {"security_group_ids": ["sg-0abc"]},
            {"subnets": [f"subnet-{i}" for i in range(17)], "security_group_ids": ["sg-1"]},
            {"subnets": ["subnet_bad"], "security_group_ids": ["sg-1"]},
        ],
        [{"subnets": ["subnet-0abc1234", "subnet-0def5678"], "security_group_ids": ["sg-0abc"]}],
    ),
    "API-KMS-KEYS": (
        [{"volume_kms_key": "bad key!"}, {"output_kms_key": "k" * 2049}],
        [
            {
                "volume_kms_key": "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab",
                "output_kms_key": "alias/training",
            }
        ],
    ),
    "API-ROLE": (
        [{"role": DELETE}, {"role": "SageMakerRole"}],
        [{"role": "arn:aws-cn:iam::111122223333:role/service-role/Training"}],
    ),
    "API-TAGS": (
        [
            {"tags": {"aws:team": "x"}},
            {"tags": {f"k{i}": "v" for i in range(51)}},
            {"tags": [{"Key": "team", "Value": "v" * 257}]},
        ],
        [{"tags": [{"Key": "team", "Value": "ml-platform"}]}, {"tags": {"cost-center": "42"}}],
    ),
    "API-CHECKPOINT": (
        [{"checkpoint_local_path": "/opt/ml/checkpoints"}],
        [{"checkpoint_local_path": "/opt/ml/checkpoints", "checkpoint_s3_uri": "s3://bkt/c"}],
    ),
    "API-METRICS": (
        [
            {"metric_definitions": [{"Name": f"m{i}", "Regex": "x=(.*)"} for i in range(41)]},
            {"metric_definitions": [{"Name": "", "Regex": "x"}]},
        ],
        [{"metric_definitions": [{"Name": "loss", "Regex": "loss=([0-9.]+)"}]}],
    ),
    "API-REQUEST": (
        [{"image_uri": "r" * 256, "framework_version": DELETE, "py_version": DELETE}],
        [{"image_uri": "r" * 255, "framework_version": DELETE, "py_version": DELETE}],
    ),
}


@pytest.fixture(scope="module")
def source_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / "train.py").write_text("print('train')\n")
    package = tmp_path_factory.mktemp("package")
    (package / "train.py").write_text("print('train')\n")
    (package / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    return {"<scripts>": str(scripts), "<package>": str(package)}


def _materialize(override: dict[str, Any], dirs: dict[str, str]) -> dict[str, Any]:
    data = spec_dict(override) if "framework" not in override else dict(override)
    if data.get("source_dir") in dirs:
        data["source_dir"] = dirs[data["source_dir"]]
    return data


def test_every_rule_has_cases() -> None:
    assert {r.id for r in RULES} == set(CASES)
    for rule_id, (failing, passing) in CASES.items():
        assert failing and passing, rule_id


@pytest.mark.parametrize(
    ("rule_id", "index"),
    [(rule_id, i) for rule_id, (failing, _) in CASES.items() for i in range(len(failing))],
)
def test_failing_case(rule_id: str, index: int, source_dirs: dict[str, str]) -> None:
    data = _materialize(CASES[rule_id][0][index], source_dirs)
    violations = [v for v in violations_of(data) if v.rule == rule_id]
    assert violations, f"{rule_id} did not fire"
    for violation in violations:
        assert violation.path
        assert violation.allowed
        assert violation.fix
        assert str(violation).startswith(f"[{rule_id}] {violation.path}: ")


@pytest.mark.parametrize(
    ("rule_id", "index"),
    [(rule_id, i) for rule_id, (_, passing) in CASES.items() for i in range(len(passing))],
)
def test_passing_case_is_valid(rule_id: str, index: int, source_dirs: dict[str, str]) -> None:
    data = _materialize(CASES[rule_id][1][index], source_dirs)
    assert violations_of(data) == []


def test_rules_are_documented() -> None:
    for registered in RULES:
        assert registered.title and registered.source and registered.example, registered.id
        assert registered.id.split("-")[0] in {"LAU", "COL", "HC", "FW", "API", "RUN", "ACK"}
    assert rule_by_id("HC-GROUP-COUNT").topic == "cluster"


def test_catalogue_is_current() -> None:
    from hetero_constructs.checks.docs import render

    catalogue = Path(__file__).parents[2] / "docs" / "rules.md"
    assert catalogue.read_text() == render(), "run `make docs` to regenerate docs/rules.md"


def test_an_acknowledged_warning_no_longer_stops_the_request() -> None:
    data = spec_dict(DDP_22, with_gpu_group("ml.p3dn.24xlarge"), dist(pytorchddp=ON))
    assert {v.rule for v in violations_of(data)} == {"LAU-SMDDP-INSTANCE"}
    reason = "p3dn.24xlarge is in the SDK's SMDDP list; validated on our cluster"
    acknowledged = plan(
        spec_from_dict({**data, "acknowledgments": {"LAU-SMDDP-INSTANCE": reason}}),
        Deployment(job_name="job"),
    )
    assert acknowledged.ok and acknowledged.request is not None
    ((warning, given),) = acknowledged.acknowledged
    assert warning.rule == "LAU-SMDDP-INSTANCE" and warning.severity == "warning"
    assert given == reason


def test_one_root_cause_gives_one_violation() -> None:
    data = spec_dict(DDP_22, with_gpu_group("ml.g5.48xlarg"), dist(pytorchddp=ON))
    found = violations_of(data)
    assert [v.rule for v in found] == ["API-INSTANCE-TYPE"]  # no SMDDP follow-on
    assert found[0].fix == "did you mean ml.g5.48xlarge?"
