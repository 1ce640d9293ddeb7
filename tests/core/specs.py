"""Spec-file dicts for the tests: one valid heterogeneous job, and ways to vary it."""

from __future__ import annotations

import copy
from typing import Any

from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.violations import Violation

DELETE = object()

ROLE = "arn:aws:iam::111122223333:role/SageMakerTraining"

BASE: dict[str, Any] = {
    "framework": "pytorch",
    "framework_version": "2.3.0",
    "py_version": "py311",
    "entry_point": "train.py",
    "role": ROLE,
    "region": "us-west-2",
    "output_path": "s3://bucket/output",
    "job_name": "hetero-test",
    "instance_groups": [
        {"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
        {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
    ],
    "channels": {"train": {"s3_uri": "s3://bucket/train", "instance_groups": ["data"]}},
    "distribution": {"torch_distributed": {"enabled": True}, "instance_groups": ["gpu"]},
}

HOMOGENEOUS: dict[str, Any] = {
    "instance_groups": DELETE,
    "instance_type": "ml.p4d.24xlarge",
    "instance_count": 2,
    "channels": {"train": "s3://bucket/train"},
    "distribution": {"torch_distributed": {"enabled": True}},
}


def spec_dict(*overrides: dict[str, Any]) -> dict[str, Any]:
    """BASE with top-level keys replaced (``DELETE`` removes a key), applied in order."""
    data = copy.deepcopy(BASE)
    for override in overrides:
        for key, value in override.items():
            if value is DELETE:
                data.pop(key, None)
            else:
                data[key] = copy.deepcopy(value)
    return data


def with_gpu_group(instance_type: str, count: int = 2) -> dict[str, Any]:
    return {
        "instance_groups": [
            {"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
            {"name": "gpu", "instance_type": instance_type, "instance_count": count},
        ]
    }


def violations_of(data: Any, deployment: Deployment | None = None) -> list[Violation]:
    """Every violation, of the file and of the rules, as the CLI reports them."""
    reading = read_spec(data)
    if reading.spec is None:
        return list(reading.violations)
    return [*reading.violations, *plan(reading.spec, deployment).violations]


def rule_ids(data: Any, deployment: Deployment | None = None) -> set[str]:
    return {v.rule for v in violations_of(data, deployment)}
