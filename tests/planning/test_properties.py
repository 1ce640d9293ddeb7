"""Property tests: generated specs are either accepted with a request botocore validates, or
rejected with violations only; no input whatsoever makes anything else escape."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.service import request_validator
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.violations import SpecValidationError, Violation
from tests.fixtures.strategies import JOB_NAME, spec_dicts

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(data: Any) -> tuple[dict[str, Any] | None, list[Violation]]:
    reading = read_spec(data)
    if reading.spec is None:
        return None, list(reading.violations)
    result = plan(reading.spec, Deployment())
    return result.request, [*reading.violations, *result.violations]


@SETTINGS
@given(spec_dicts())
def test_accepted_specs_give_requests_botocore_validates(data: dict[str, Any]) -> None:
    request, violations = outcome(data)
    if violations:
        assert all(isinstance(v, Violation) and v.rule and v.message for v in violations)
        return
    assert request is not None
    assert request_validator.botocore_validation_errors(request) is None
    assert request_validator.check_request(request) == []
    # Invariants stated independently of the rules' code.
    assert JOB_NAME.fullmatch(request["TrainingJobName"])
    resources = request["ResourceConfig"]
    groups = resources.get("InstanceGroups", [])
    assert bool(groups) != ("InstanceType" in resources)
    assert len(groups) <= 5
    group_names = [g["InstanceGroupName"] for g in groups]
    assert len(set(group_names)) == len(group_names)
    assert all(g["InstanceCount"] >= 1 for g in groups)
    sources = [c["DataSource"]["S3DataSource"] for c in request.get("InputDataConfig", [])]
    scoped = [bool(s.get("InstanceGroupNames")) for s in sources]
    assert all(scoped) or not any(scoped)
    for source in sources:
        assert set(source.get("InstanceGroupNames", [])) <= set(group_names)
    assert len(request["HyperParameters"]) <= 100
    if len(groups) > 1 and "sagemaker_distribution_instance_groups" in request["HyperParameters"]:
        assert request["HyperParameters"]["sagemaker_distribution_instance_groups"].count('"') == 2


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
known_keys = st.sampled_from(
    sorted(
        {
            "framework",
            "framework_version",
            "py_version",
            "entry_point",
            "instance_groups",
            "instance_type",
            "instance_count",
            "channels",
            "distribution",
            "smddp_collective",
            "hyperparameters",
            "environment",
            "tags",
            "subnets",
            "max_run",
            "max_wait",
            "source_dir",
            "use_spot_instances",
            "metric_definitions",
            "volume_size",
            "role",
            "region",
            "job_name",
        }
    )
)


@SETTINGS
@given(st.one_of(json_values, st.dictionaries(known_keys, json_values, max_size=10)))
def test_no_input_makes_anything_but_violations_escape(data: Any) -> None:
    try:
        request, violations = outcome(data)
    except SpecValidationError:
        return
    assert request is not None or violations


MUTATIONS = [
    ("instance_groups", [{"name": "a", "instance_type": "ml.c5.xlarge"}]),
    ("distribution", {"mpi": {"enabled": "true"}}),
    ("channels", {"t": {"s3_uri": 3}}),
    ("tags", [{"Key": 1}]),
    ("metric_definitions", [{"Name": "x"}]),
    ("hyperparameters", {"x": {1, 2}}),
]


@SETTINGS
@given(spec_dicts(), st.sampled_from(MUTATIONS))
def test_mutated_specs_only_give_violations(
    data: dict[str, Any], mutation: tuple[str, Any]
) -> None:
    key, value = mutation
    data[key] = value
    with contextlib.suppress(SpecValidationError):
        outcome(data)


def test_generator_reaches_both_verdicts() -> None:
    """The property above is only meaningful if many generated specs are accepted."""
    verdicts: list[bool] = []

    @settings(
        max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(spec_dicts())
    def sample(data: dict[str, Any]) -> None:
        verdicts.append(not outcome(data)[1])

    sample()
    accepted = sum(verdicts)
    assert 0.15 * len(verdicts) < accepted < 0.85 * len(verdicts), (accepted, len(verdicts))
