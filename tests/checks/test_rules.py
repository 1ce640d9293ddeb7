"""Each rule has at least one spec that breaks it and one fully valid spec near that edge."""

from __future__ import annotations

import pytest

from hetero_constructs.checks.registry import RULES, rule_by_id
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.file.reader import spec_from_dict
from tests.fixtures.rule_cases import CASES, DDP_22, ON, dist, materialize
from tests.fixtures.specs import spec_dict, violations_of, with_gpu_group


@pytest.fixture(scope="module")
def source_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / "train.py").write_text("print('train')\n")
    package = tmp_path_factory.mktemp("package")
    (package / "train.py").write_text("print('train')\n")
    (package / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    return {"<scripts>": str(scripts), "<package>": str(package)}


def test_every_rule_has_cases() -> None:
    assert {r.id for r in RULES} == set(CASES)
    for rule_id, (failing, passing) in CASES.items():
        assert failing and passing, rule_id


@pytest.mark.parametrize(
    ("rule_id", "index"),
    [(rule_id, i) for rule_id, (failing, _) in CASES.items() for i in range(len(failing))],
)
def test_failing_case(rule_id: str, index: int, source_dirs: dict[str, str]) -> None:
    data = materialize(CASES[rule_id][0][index], source_dirs)
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
    data = materialize(CASES[rule_id][1][index], source_dirs)
    assert violations_of(data) == []


def test_rules_are_documented() -> None:
    for registered in RULES:
        assert registered.title and registered.source and registered.example, registered.id
        assert registered.id.split("-")[0] in {"LAU", "COL", "HC", "FW", "API", "RUN", "ACK"}
    assert rule_by_id("HC-GROUP-COUNT").topic == "cluster"


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
