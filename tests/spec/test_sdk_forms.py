"""Issue 33 item 5: a Python user writes the SDK's dict forms, and every type error names a
type the user can import."""

from __future__ import annotations

import re
from typing import Any

import pytest

import hetero_constructs
from hetero_constructs import (
    DistributedTraining,
    InstanceGroup,
    TrainingChannel,
    TrainingMetric,
    TrainingSpec,
)
from hetero_constructs.spec.cluster import InstanceFallback
from hetero_constructs.spec.distribution import LauncherConfig
from hetero_constructs.spec.schema import schema_of
from hetero_constructs.spec.violations import SpecValidationError
from tests.fixtures.specs import ROLE

BASE: dict[str, Any] = {
    "entry_point": "train.py",
    "framework_version": "2.3",
    "py_version": "py311",
    "role": ROLE,
    "output_path": "s3://bucket/output/",
}
GROUPS = [InstanceGroup("data", "ml.c5.xlarge", 2), InstanceGroup("gpu", "ml.p4d.24xlarge", 1)]


def test_the_sdk_s_dict_forms_make_the_same_spec_as_the_objects() -> None:
    as_sdk = TrainingSpec(
        **BASE,
        instance_groups=[
            {"name": "data", "instance_type": "ml.c5.xlarge", "instance_count": 2},
            {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 1},
        ],
        metric_definitions=[{"Name": "train:loss", "Regex": "loss=([0-9.]+)"}],
        tags=[{"Key": "team", "Value": "ml"}],
        distribution={"torch_distributed": {"enabled": True}, "instance_groups": ["gpu"]},
        channels={"train": "s3://bucket/train/"},
    )
    as_objects = TrainingSpec(
        **BASE,
        instance_groups=GROUPS,
        metric_definitions=[TrainingMetric("train:loss", "loss=([0-9.]+)")],
        tags={"team": "ml"},
        distribution=DistributedTraining.torch_distributed(instance_group="gpu"),
        channels=[TrainingChannel("train", "s3://bucket/train/")],
    )
    assert as_sdk == as_objects


def test_a_wrong_dict_form_names_the_path_of_what_is_wrong() -> None:
    with pytest.raises(SpecValidationError) as raised:
        TrainingSpec(
            **BASE,
            instance_groups=GROUPS,
            metric_definitions=[{"Name": "loss", "Regexp": "x"}],
            tags=[{"Key": "team"}],
        )
    paths = {v.path for v in raised.value.violations}
    assert "metric_definitions[0].Regexp" in paths  # the unknown key, with the SDK's name
    assert "tags[0].Value" in paths


#: A value no field of an object type takes.
WRONG = 5
#: Capitalized words of the messages that are no type: the SDK, JSON, Python's True, the
#: values of SMDDP's collectives.
NOT_TYPES = {"SDK", "JSON", "True", "AllReduce", "AllGather"}


@pytest.mark.parametrize(
    "cls",
    [TrainingSpec, InstanceGroup, TrainingChannel, DistributedTraining, LauncherConfig,
     InstanceFallback, TrainingMetric],
)  # fmt: skip
def test_every_type_error_names_a_type_the_user_can_import(cls: type) -> None:
    """Each field whose values are spec objects says which, by a name ``hetero_constructs``
    exports (never an API member's name such as ``MetricDefinitions``)."""
    exported = set(hetero_constructs.__all__)
    for declared in schema_of(cls):
        objects = set(re.findall(r"\b([A-Z][A-Za-z]+)\b", declared.type.name)) - NOT_TYPES
        if not objects or "one of" in declared.type.name:  # no type, or an enum's values
            continue
        with pytest.raises(SpecValidationError) as raised:
            _build_with(cls, declared.name, WRONG)
        (violation,) = [v for v in raised.value.violations if v.path == declared.name]
        for name in objects:  # each type the field takes: importable, and named
            assert name in exported, (cls.__name__, declared.name, name)
            assert name in violation.allowed, (cls.__name__, declared.name, violation.allowed)


def _build_with(cls: type, name: str, value: Any) -> Any:
    """``cls`` built with a valid value of each required field and ``value`` for ``name``."""
    valid: dict[type, dict[str, Any]] = {
        TrainingSpec: {**BASE, "instance_groups": GROUPS},
        InstanceGroup: {"name": "data", "instance_type": "ml.c5.xlarge"},
        TrainingChannel: {"name": "train", "s3_uri": "s3://bucket/train/"},
        DistributedTraining: {},
        LauncherConfig: {"kind": "torch_distributed"},
        InstanceFallback: {"instance_type": "ml.c5.xlarge"},
        TrainingMetric: {"name": "loss", "regex": "x"},
    }
    return cls(**{**valid[cls], name: value})
