"""Fallback instance types, training plans and warm pools in the core."""

from __future__ import annotations

from typing import Any

import pytest

from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.cluster import InstanceFallback, InstanceGroup
from hetero_constructs.spec.distribution import DistributedTraining
from hetero_constructs.spec.file.reader import read_spec, spec_from_dict
from hetero_constructs.spec.file.writer import spec_to_dict
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.variants import instance_types, variant, variant_count
from hetero_constructs.spec.violations import SpecValidationError

BASE: dict[str, Any] = dict(
    entry_point="train.py",
    framework_version="2.3.0",
    py_version="py311",
    output_path="s3://bkt/out/",
    role="arn:aws:iam::111122223333:role/training",
    region="us-west-2",
    source_dir="s3://bkt/code/sourcedir.tar.gz",
)
DEPLOYMENT = Deployment(job_name="job")


def hetero(gpu_fallbacks: Any, **changes: Any) -> TrainingSpec:
    groups = [
        InstanceGroup("data", "ml.c5.18xlarge", 1),
        InstanceGroup("gpu", "ml.p5.48xlarge", 2, fallbacks=gpu_fallbacks),
    ]
    fields = {
        **BASE,
        "instance_groups": groups,
        "distribution": DistributedTraining.torch_distributed(instance_group="gpu"),
        **changes,
    }
    return TrainingSpec(**fields)


def test_fallbacks_accept_pairs_types_and_objects() -> None:
    group = InstanceGroup(
        "gpu",
        "ml.p5.48xlarge",
        2,
        fallbacks=[("ml.p4de.24xlarge", 2), "ml.p4d.24xlarge", InstanceFallback("ml.g5.48xlarge")],
    )
    assert group.fallbacks == (
        InstanceFallback("ml.p4de.24xlarge", 2),
        InstanceFallback("ml.p4d.24xlarge", 2),  # a bare type keeps the group's count
        InstanceFallback("ml.g5.48xlarge", 1),
    )
    with pytest.raises(SpecValidationError, match="fallbacks"):
        InstanceGroup("gpu", "ml.p5.48xlarge", 2, fallbacks=[42])


def test_variants_move_each_group_to_its_next_fallback_and_stay_on_the_last() -> None:
    spec = hetero([("ml.p4de.24xlarge", 2), ("ml.p4d.24xlarge", 4)])
    assert variant_count(spec) == 3
    types = [
        [(g.instance_type, g.instance_count) for g in variant(spec, i).spec.instance_groups]
        for i in range(5)
    ]
    assert types[0] == [("ml.c5.18xlarge", 1), ("ml.p5.48xlarge", 2)]
    assert types[1] == [("ml.c5.18xlarge", 1), ("ml.p4de.24xlarge", 2)]
    assert types[2] == types[3] == types[4] == [("ml.c5.18xlarge", 1), ("ml.p4d.24xlarge", 4)]
    assert variant(spec, 7).index == 2
    assert instance_types(spec) == [
        "ml.c5.18xlarge",
        "ml.p4d.24xlarge",
        "ml.p4de.24xlarge",
        "ml.p5.48xlarge",
    ]


def test_each_variant_plans_its_own_request() -> None:
    spec = hetero([("ml.p4d.24xlarge", 4)])
    first = plan(spec, DEPLOYMENT)
    assert first.ok, first.violations
    second = plan(spec, DEPLOYMENT, variant=1)
    assert second.request is not None and first.request is not None
    gpu = second.request["ResourceConfig"]["InstanceGroups"][1]
    assert (gpu["InstanceType"], gpu["InstanceCount"]) == ("ml.p4d.24xlarge", 4)
    assert second.request["HyperParameters"]["sagemaker_instance_type"] == '"ml.p4d.24xlarge"'
    assert first.request["HyperParameters"]["sagemaker_instance_type"] == '"ml.p5.48xlarge"'


def test_a_fallback_that_breaks_a_rule_is_named_by_its_path() -> None:
    spec = hetero([("ml.p4d.24xlarge", 4), ("ml.c5.18xlarge", 2), ("ml.p4d.24xlarge", 0)])
    violations = plan(spec, DEPLOYMENT).violations
    paths = {v.path for v in violations}
    assert "instance_groups[1].fallbacks[1].instance_type" in paths  # no GPU for torchrun
    assert "instance_groups[1].fallbacks[2].instance_count" in paths
    assert not any(v.path.startswith("instance_groups[1].fallbacks[0]") for v in violations)
    # Each fallback problem is reported once, not once per variant that repeats it.
    assert len(violations) == len({(v.rule, v.path, v.problem) for v in violations})


def test_fallbacks_round_trip_through_spec_files() -> None:
    spec = hetero([("ml.p4de.24xlarge", 2)])
    data = spec_to_dict(spec)
    assert data["instance_groups"][1]["fallbacks"] == [
        {"instance_type": "ml.p4de.24xlarge", "instance_count": 2}
    ]
    assert spec_from_dict(data).instance_groups == spec.instance_groups
    broken = read_spec(
        {
            **data,
            "instance_groups": [
                data["instance_groups"][0],
                {**data["instance_groups"][1], "fallbacks": [{"count": 2}]},
            ],
        }
    )
    assert {v.path for v in broken.violations} >= {
        "instance_groups[1].fallbacks[0].instance_type",
        "instance_groups[1].fallbacks[0].count",
    }


def test_a_fallback_without_a_count_keeps_its_group_s_in_files_as_in_python() -> None:
    """A spec file's fallback without instance_count is read as a bare type is in Python."""
    in_python = hetero(["ml.p4de.24xlarge"])
    data = spec_to_dict(in_python)
    del data["instance_groups"][1]["fallbacks"][0]["instance_count"]
    (fallback,) = spec_from_dict(data).instance_groups[1].fallbacks
    assert fallback == InstanceFallback("ml.p4de.24xlarge", 2)
    assert spec_from_dict(data).instance_groups == in_python.instance_groups
    data["instance_groups"][1]["instance_count"] = "2"  # reported at the group alone
    assert [v.path for v in read_spec(data).violations] == ["instance_groups[1].instance_count"]


def test_training_plan_and_warm_pool_reach_the_request() -> None:
    arn = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/reserved-p5"
    spec = TrainingSpec(
        **BASE,
        instance_type="ml.p5.48xlarge",
        instance_count=2,
        training_plan_arn=arn,
        keep_alive_period_in_seconds=1800,
    )
    result = plan(spec, DEPLOYMENT)
    assert result.request is not None, result.violations
    resources = result.request["ResourceConfig"]
    assert resources["TrainingPlanArn"] == arn
    assert resources["KeepAlivePeriodInSeconds"] == 1800


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"keep_alive_period_in_seconds": 600}, "heterogeneous"),
        (
            {"keep_alive_period_in_seconds": 600, "use_spot_instances": True, "max_wait": 90000},
            "spot",
        ),
        ({"keep_alive_period_in_seconds": 7200}, "one hour"),
    ],
)
def test_warm_pools_are_refused_where_sagemaker_refuses_them(
    changes: dict[str, Any], problem: str
) -> None:
    spec = hetero([], **changes)
    found = [v for v in plan(spec, DEPLOYMENT).violations if v.rule == "HC-WARM-POOL"]
    assert any(problem in v.problem for v in found), found
