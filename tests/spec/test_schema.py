"""The schema: every field, declared once, is checked, read, written and documented from it.

The cases are generated from the declarations, so a new field is covered without a line here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.spec import reference
from hetero_constructs.spec.cluster import InstanceFallback, InstanceGroup, TrainingChannel
from hetero_constructs.spec.distribution import DistributedTraining, LauncherConfig
from hetero_constructs.spec.fields import REQUIRED_RULE, TYPE_RULE, UNKNOWN_KEY_RULE
from hetero_constructs.spec.file.reader import read_spec, spec_from_dict
from hetero_constructs.spec.file.writer import spec_to_dict
from hetero_constructs.spec.schema import (
    BOOLEAN,
    INTEGER,
    JSON_MAP,
    MAPPING,
    STRING,
    STRING_LIST,
    STRING_MAP,
    STRINGS,
    VALUE,
    SpecField,
    schema_of,
)
from hetero_constructs.spec.training import TrainingMetric, TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError

REPO = Path(__file__).parents[2]
MINIMAL = {"entry_point": "train.py", "framework": "pytorch"}
SPEC_FIELDS = schema_of(TrainingSpec)

# A value of each shape unlike its default; the object shapes get one object each.
OBJECT_VALUES: dict[str, Any] = {
    "instance_groups": (
        InstanceGroup("gpu", "ml.p4d.24xlarge", 2, fallbacks=(("ml.p5.48xlarge", 1),)),
    ),
    "channels": (TrainingChannel("train", "s3://b/t/", ("gpu",), distribution="ShardedByS3Key"),),
    "distribution": DistributedTraining.torch_distributed(
        instance_group="gpu", processes_per_host=4, smddp_collective="AllGather"
    ),
    "metric_definitions": (TrainingMetric("loss", "loss=(\\S+)"),),
}


def distinct_value(declared: SpecField) -> Any:
    """A well-typed value of the field that is not its default."""
    if declared.name in OBJECT_VALUES:
        return OBJECT_VALUES[declared.name]
    if declared.type in (STRING,):
        return f"distinct-{declared.name}"
    if declared.type is INTEGER:
        return 7 if declared.default != 7 else 8
    if declared.type is BOOLEAN:
        return not declared.default
    if declared.type is STRING_LIST:
        return ("distinct",)
    if declared.type in (STRING_MAP, JSON_MAP) or declared.type.file_shape == "tags":
        return {"distinct": "value"}
    members = list(type(declared.default))
    return members[-1]


@pytest.mark.parametrize("declared", SPEC_FIELDS, ids=lambda d: d.name)
def test_each_field_survives_writing_and_reading_a_spec_file(declared: SpecField) -> None:
    value = distinct_value(declared)
    spec = dataclasses.replace(TrainingSpec("train.py"), **{declared.name: value})
    data = spec_to_dict(spec)
    assert declared.key in data
    assert spec_from_dict(data) == spec


def test_a_spec_with_every_field_set_survives_writing_and_reading() -> None:
    values = {d.name: distinct_value(d) for d in SPEC_FIELDS if d.name != "entry_point"}
    spec = TrainingSpec("train.py", **values)
    assert spec_from_dict(spec_to_dict(spec)) == spec


def test_defaults_are_left_out_of_the_file_but_its_required_keys_are_not() -> None:
    assert spec_to_dict(TrainingSpec("train.py")) == MINIMAL


def _wrong(declared: SpecField) -> Any:
    return {"not": "a string"} if declared.type.file_shape != MAPPING else "not a mapping"


@pytest.mark.parametrize(
    "declared",
    [d for d in SPEC_FIELDS if d.type.file_shape in (VALUE, STRINGS, MAPPING)],
    ids=lambda d: d.name,
)
def test_a_value_of_the_wrong_type_is_a_type_violation_at_its_key(declared: SpecField) -> None:
    reading = read_spec({**MINIMAL, declared.key: _wrong(declared)})
    assert reading.spec is None
    assert [(v.rule, v.path) for v in reading.violations] == [(TYPE_RULE, declared.name)]


@pytest.mark.parametrize("cls", [TrainingSpec, InstanceGroup, TrainingChannel, LauncherConfig])
def test_the_python_api_checks_the_same_types(cls: type) -> None:
    fields = schema_of(cls)
    required = {d.name: distinct_value(d) for d in fields if d.required and d.type is STRING}
    if cls is LauncherConfig:
        required = {"kind": "mpi"}
    wrong = {d.name: object() for d in fields if d.type in (STRING, INTEGER, BOOLEAN)}
    with pytest.raises(SpecValidationError) as raised:
        cls(**{**required, **wrong})
    assert [v.path for v in raised.value.violations] == list(wrong)
    assert {v.rule for v in raised.value.violations} == {TYPE_RULE}


def test_every_required_key_of_a_file_is_named_when_missing() -> None:
    reading = read_spec({})
    required = [d.name for d in SPEC_FIELDS if d.required_in_file]
    assert required == ["entry_point", "framework"]
    assert [(v.rule, v.path) for v in reading.violations] == [(REQUIRED_RULE, n) for n in required]


@pytest.mark.parametrize("cls", [InstanceGroup, InstanceFallback])
def test_required_keys_of_nested_mappings_come_from_the_schema(cls: type) -> None:
    group: dict[str, Any] = {"name": "gpu", "instance_type": "ml.p4d.24xlarge"}
    if cls is InstanceFallback:
        group["fallbacks"] = [{"instance_count": 2}]
        expected = ["instance_groups[0].fallbacks[0].instance_type"]
    else:
        del group["instance_type"]
        expected = ["instance_groups[0].instance_type"]
    reading = read_spec({**MINIMAL, "instance_groups": [group]})
    assert [v.path for v in reading.violations if v.rule == REQUIRED_RULE] == expected


def test_a_misspelled_key_is_unknown_and_the_fix_names_the_declared_one() -> None:
    reading = read_spec({**MINIMAL, "volume_sizes": 40, "metric_definitions": [{"Nme": "x"}]})
    unknown = [v for v in reading.violations if v.rule == UNKNOWN_KEY_RULE]
    assert [v.path for v in unknown] == ["volume_sizes", "metric_definitions[0].Nme"]
    assert "volume_size" in unknown[0].fix
    assert "Name" in unknown[1].fix


def test_the_field_reference_is_current() -> None:
    document = REPO / "docs" / "spec-fields.md"
    assert document.read_text() == reference.render(), (
        "run `make docs` to regenerate docs/spec-fields.md"
    )
    for declared in SPEC_FIELDS:
        assert f"| `{declared.name}` |" in document.read_text()
