"""Property tests: generated specs are either accepted with a request botocore validates, or
rejected with violations only; no input whatsoever makes anything else escape."""

from __future__ import annotations

import contextlib
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.service import catalog, request_validator
from hetero_constructs.service import model as service_model
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.violations import SpecValidationError, Violation
from tests.core.specs import ROLE

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INSTANCE_TYPES = sorted(service_model.training_instance_types())
JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")


def mostly(
    valid: st.SearchStrategy[Any], invalid: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    """Valid seven times in eight, so that accepted specs are common and edges still appear."""
    return st.integers(0, 7).flatmap(lambda n: invalid if n == 7 else valid)


names = mostly(st.sampled_from(["data", "gpu", "cpu"]), st.sampled_from(["x" * 65, "", "g9"]))
instance_types = mostly(
    st.one_of(
        st.sampled_from(
            [
                "ml.c5.18xlarge",
                "ml.p4d.24xlarge",
                "ml.p4de.24xlarge",
                "ml.p3.16xlarge",
                "ml.g5.48xlarge",
                "ml.p5.48xlarge",
                "ml.m5.xlarge",
            ]
        ),
        st.sampled_from(INSTANCE_TYPES),
    ),
    st.sampled_from(["ml.p4d.24xlarg", "p4d", "", "ml.trn1.32xlarge"]),
)
counts = mostly(st.sampled_from([1, 2, 4]), st.sampled_from([0, -1]))
groups = st.lists(
    st.fixed_dictionaries(
        {"name": names, "instance_type": instance_types, "instance_count": counts}
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda g: g["name"] if len(g["name"]) < 5 else id(g),
)
launcher_options = st.fixed_dictionaries(
    {"enabled": mostly(st.just(True), st.just(False))},
    optional={
        "processes_per_host": mostly(st.sampled_from([1, 8]), st.just(0)),
        "custom_mpi_options": st.sampled_from(["", "-verbose"]),
    },
)
launcher_keys = [
    "torch_distributed",
    "pytorchddp",
    "mpi",
    "parameter_server",
    "multi_worker_mirrored_strategy",
]


@st.composite
def distributions(draw: st.DrawFn, group_names: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    count = draw(mostly(st.just(1), st.sampled_from([0, 2])))
    for key in draw(
        st.lists(
            st.sampled_from([*launcher_keys, "smddp"]), min_size=count, max_size=count, unique=True
        )
    ):
        if key == "smddp":
            result["smdistributed"] = {"dataparallel": draw(launcher_options)}
        else:
            result[key] = draw(launcher_options)
    if draw(st.integers(0, 7)) == 7:
        parameters = {"partitions": draw(mostly(st.just(2), st.just(0)))}
        result.setdefault("smdistributed", {})["modelparallel"] = {
            "enabled": True,
            "parameters": parameters,
        }
    if group_names:
        choice = draw(
            mostly(st.sampled_from(group_names).map(lambda n: [n]), st.lists(names, max_size=2))
        )
        result["instance_groups"] = choice
    return result


@st.composite
def channel_maps(draw: st.DrawFn, group_names: list[str]) -> dict[str, Any]:
    channel_names = draw(
        st.lists(
            mostly(
                st.sampled_from(["train", "eval", "test"]), st.sampled_from(["code", "bad name"])
            ),
            max_size=3,
            unique=True,
        )
    )
    scoped = bool(group_names) and draw(st.booleans())
    result: dict[str, Any] = {}
    for name in channel_names:
        channel: dict[str, Any] = {
            "s3_uri": draw(mostly(st.just(f"s3://bucket/{name}"), st.just("bucket/x")))
        }
        if scoped and draw(mostly(st.just(True), st.just(False))):
            channel["instance_groups"] = draw(
                mostly(
                    st.lists(st.sampled_from(group_names), min_size=1, max_size=3, unique=True),
                    st.lists(names, max_size=6),
                )
            )
        if draw(st.integers(0, 7)) == 7:
            channel["distribution"] = draw(st.sampled_from(["ShardedByS3Key", "Sharded"]))
        result[name] = channel
    return result


versions = mostly(
    st.sampled_from(
        [
            (r.framework.value, r.version, r.py_versions[-1])
            for r in catalog.RELEASES
            if r.framework.value == "pytorch" and r.version >= "2"
        ]
    ),
    st.one_of(
        st.sampled_from(
            [(r.framework.value, r.version, r.py_versions[0]) for r in catalog.RELEASES]
        ),
        st.tuples(
            st.sampled_from(["pytorch", "tensorflow"]),
            st.sampled_from(["2.2", "9.9"]),
            st.sampled_from(["py3", "py310"]),
        ),
    ),
)


@st.composite
def spec_dicts(draw: st.DrawFn) -> dict[str, Any]:
    framework, version, py = draw(versions)
    data: dict[str, Any] = {
        "framework": framework,
        "framework_version": version,
        "py_version": py,
        "entry_point": draw(mostly(st.just("train.py"), st.just("train.sh"))),
        "role": ROLE,
        "region": draw(
            mostly(st.just("us-west-2"), st.sampled_from(["cn-north-1", "us-iso-east-1"]))
        ),
        "output_path": "s3://bucket/out",
        "job_name": draw(mostly(st.sampled_from(["job-1", "a" * 63]), st.just("bad_name"))),
    }
    group_names: list[str] = []
    if draw(st.booleans()):
        data["instance_groups"] = draw(groups)
        group_names = [g["name"] for g in data["instance_groups"]]
    if not group_names or draw(st.integers(0, 9)) == 9:
        data["instance_type"] = draw(instance_types)
        data["instance_count"] = draw(counts)
    data["channels"] = draw(channel_maps(group_names))
    if draw(st.booleans()):
        data["distribution"] = draw(distributions(group_names))
    if draw(st.integers(0, 5)) == 5:
        data["smddp_collective"] = draw(st.sampled_from(["AllReduce", "AllGather"]))
    data["hyperparameters"] = draw(
        st.dictionaries(
            mostly(
                st.sampled_from(["epochs", "lr", "name"]),
                st.sampled_from(["sagemaker_x", "k" * 300]),
            ),
            st.one_of(
                st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.booleans()
            ),
            max_size=3,
        )
    )
    if draw(st.integers(0, 3)) == 3:
        data["use_spot_instances"] = True
        data["max_wait"] = draw(mostly(st.sampled_from([86400, 200000]), st.just(100)))
    if draw(st.integers(0, 5)) == 5:
        data["enable_network_isolation"] = True
    return data


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
