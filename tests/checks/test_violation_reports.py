"""How violations read, and that one plan shows them all (issue 23, items 6 and 8)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from hetero_constructs import validate
from hetero_constructs.cli import main
from hetero_constructs.cli.output import print_violations
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment, RuleContext
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import ACKNOWLEDGMENT_REASON, SpecValidationError
from tests.fixtures.rule_cases import DDP_22, ON
from tests.fixtures.specs import DELETE, spec_dict, violations_of

UNLISTED = "LAU-SMDDP-INSTANCE-UNLISTED"
REASON = "the SDK lists p3dn.24xlarge for SMDDP; measured on our cluster"


def smddp_on(*types: str, named: list[str] | None = None, **launcher: Any) -> dict[str, Any]:
    """A data group and one GPU group per type (gpu0, gpu1, ...) running SMDDP."""
    groups = [{"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2}]
    groups += [
        {"name": f"gpu{i}", "instance_type": t, "instance_count": 2} for i, t in enumerate(types)
    ]
    distribution: dict[str, Any] = launcher or {"pytorchddp": ON}
    if named is not None:
        distribution = {**distribution, "instance_groups": named}
    return spec_dict(DDP_22, {"instance_groups": groups, "distribution": distribution})


def spec_of(data: dict[str, Any]) -> TrainingSpec:
    reading = read_spec(data)
    assert reading.spec is not None, reading.violations
    return reading.spec


# -- SMDDP on a type no source lists is an error -------------------------------------------------


@pytest.mark.parametrize(
    ("instance_type", "launcher", "rule", "severity"),
    [
        ("ml.g5.xlarge", {"pytorchddp": ON}, UNLISTED, "error"),
        ("ml.g5.48xlarge", {"smdistributed": {"dataparallel": ON}}, UNLISTED, "error"),
        ("ml.p3dn.24xlarge", {"pytorchddp": ON}, "LAU-SMDDP-INSTANCE", "warning"),
        ("ml.p3.16xlarge", {"pytorchddp": ON}, "LAU-SMDDP-INSTANCE", "warning"),
    ],
)
def test_smddp_instance_severity_follows_the_sources(
    instance_type: str, launcher: dict[str, Any], rule: str, severity: str
) -> None:
    violations = violations_of(smddp_on(instance_type, named=["gpu0"], **launcher))
    assert [(v.rule, v.severity, v.path) for v in violations] == [
        (rule, severity, "instance_groups[1].instance_type")
    ]


def test_an_unlisted_type_cannot_be_acknowledged() -> None:
    data = smddp_on("ml.g5.xlarge", named=["gpu0"])
    data["acknowledgments"] = {"LAU-SMDDP-INSTANCE-UNLISTED": REASON}
    rules = {v.rule for v in violations_of(data)}
    assert rules == {"LAU-SMDDP-INSTANCE-UNLISTED", "ACK-RULE"}


def test_an_smddp_collective_on_g5_is_an_error() -> None:
    data = spec_dict(
        {
            "instance_groups": [
                {"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
                {"name": "gpu", "instance_type": "ml.g5.48xlarge", "instance_count": 2},
            ],
            "smddp_collective": "AllGather",
        }
    )
    ((violation,),) = [[v for v in violations_of(data)]]
    assert (violation.rule, violation.severity) == ("LAU-SMDDP-INSTANCE-UNLISTED", "error")
    assert "an SMDDP collective" in violation.problem


# -- every violation at once --------------------------------------------------------------------


def test_two_distribution_groups_show_the_instance_type_violations_at_once() -> None:
    """The issue's case: before, the SMDDP instance-type violation came only after the fix."""
    violations = violations_of(smddp_on("ml.g5.xlarge", "ml.g5.xlarge", named=["gpu0", "gpu1"]))
    found = {(v.rule, v.path) for v in violations}
    assert found == {
        ("HC-DISTRIBUTION-GROUP-COUNT", "distribution.instance_groups"),
        ("LAU-SMDDP-INSTANCE-UNLISTED", "instance_groups[1].instance_type"),
        ("LAU-SMDDP-INSTANCE-UNLISTED", "instance_groups[2].instance_type"),
    }
    by_path = {v.path: v for v in violations}
    assert by_path["instance_groups[1].instance_type"].problem.startswith(
        "With 'gpu0' as the distribution group: "
    )


AMBIGUOUS = [
    smddp_on("ml.g5.xlarge", "ml.p4d.24xlarge", named=["gpu0", "gpu1"]),
    smddp_on("ml.g5.xlarge", "ml.p3dn.24xlarge"),  # none named
    smddp_on("ml.g5.xlarge", "ml.p4d.24xlarge", named=["gpu1", "nope"]),
    spec_dict({"distribution": {"torch_distributed": ON}}),  # data (CPU) or gpu
    spec_dict(
        {"framework_version": "2.4.0"},  # torchrun does not support 2.4.0 on GPU
        {"distribution": {"torch_distributed": ON, "instance_groups": ["data", "gpu"]}},
    ),
]


@pytest.mark.parametrize("data", AMBIGUOUS)
def test_fixing_the_group_brings_no_new_violation(data: dict[str, Any]) -> None:
    """Whichever group the user then picks, its violations were all in the first plan."""
    first = {(v.rule, v.path) for v in violations_of(data)}
    assert ("HC-DISTRIBUTION-GROUP-COUNT", "distribution.instance_groups") in first or any(
        rule == "HC-DISTRIBUTION-GROUP-EXISTS" for rule, _ in first
    )
    spec = spec_of(data)
    candidates = RuleContext(spec).distribution_group_candidates
    assert candidates
    for group in candidates:
        fixed = {**data, "distribution": {**data["distribution"], "instance_groups": [group.name]}}
        later = {(v.rule, v.path) for v in violations_of(fixed)}
        assert later <= first, (group.name, later - first)


TWO_LAUNCHERS = [
    smddp_on("ml.g5.xlarge", named=["gpu0"], pytorchddp=ON, mpi=ON),
    smddp_on("ml.g5.xlarge", "ml.p4d.24xlarge", pytorchddp=ON, torch_distributed=ON),
    spec_dict({"distribution": {"torch_distributed": ON, "mpi": ON, "instance_groups": ["data"]}}),
]


@pytest.mark.parametrize("data", TWO_LAUNCHERS)
def test_settling_the_launcher_and_group_brings_no_new_violation(data: dict[str, Any]) -> None:
    first = {(v.rule, v.path) for v in violations_of(data)}
    assert ("LAU-ONE-LAUNCHER", "distribution") in {(r, p.split(".")[0]) for r, p in first}
    distribution = data["distribution"]
    launchers = [key for key in distribution if key != "instance_groups"]
    # The group the spec names, or, with none named, each group it could mean.
    groups = distribution.get("instance_groups") or [g["name"] for g in data["instance_groups"]]
    for launcher in launchers:
        for group in groups:
            settled = {**data, "distribution": {launcher: ON, "instance_groups": [group]}}
            later = {(v.rule, v.path) for v in violations_of(settled)}
            assert later <= first, (launcher, group, later - first)


def test_a_launcher_reading_is_named() -> None:
    violations = violations_of(TWO_LAUNCHERS[0])
    (unlisted,) = [v for v in violations if v.rule == UNLISTED]
    assert unlisted.problem.startswith("With pytorchddp as the launcher: ")


def test_a_finding_every_candidate_shares_is_reported_once_and_plainly() -> None:
    data = spec_dict(
        {"framework_version": "2.4.0"},
        {
            "instance_groups": [
                {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2},
                {"name": "g5", "instance_type": "ml.g5.48xlarge", "instance_count": 2},
            ],
            "channels": {"train": "s3://bucket/train"},
            "distribution": {"torch_distributed": ON, "instance_groups": ["gpu", "g5"]},
        },
    )
    versions = [v for v in violations_of(data) if v.rule == "LAU-TORCH-DISTRIBUTED-VERSION"]
    assert [v.path for v in versions] == ["framework_version"]
    assert not versions[0].problem.startswith("With ")


def test_a_known_distribution_group_has_no_candidates() -> None:
    assert RuleContext(spec_of(spec_dict())).distribution_group_candidates == ()


# -- severity and acknowledgment in the text output ---------------------------------------------


def test_text_output_names_severity_and_the_acknowledgment_that_silences_a_warning() -> None:
    data = smddp_on("ml.p3dn.24xlarge", "ml.g5.xlarge", named=["gpu0"])
    data["max_run"] = 0  # an error as well
    violations = violations_of(data)
    out = io.StringIO()
    print_violations(violations, "spec.yaml", out)
    text = out.getvalue()
    assert "2 violations in spec.yaml (1 error(s), 1 warning(s)):" in text
    assert "\n  error [API-STOPPING] max_run\n" in text
    assert "\n  warning [LAU-SMDDP-INSTANCE] instance_groups[1].instance_type\n" in text
    # Only the warning says how to acknowledge it, and the snippet is one a spec file takes.
    assert text.count("acknowledgments:") == 1
    snippet = re.search(r"^ +(acknowledgments: .*)$", text, re.M)
    assert snippet is not None
    entry = yaml.safe_load(snippet.group(1).replace(ACKNOWLEDGMENT_REASON, REASON))
    assert entry == {"acknowledgments": {"LAU-SMDDP-INSTANCE": REASON}}
    # Pasted into the spec (and the error fixed), the warning no longer stops the request.
    result = plan(spec_of({**data, "max_run": 3600, **entry}), Deployment())
    assert result.ok and [v.rule for v, _ in result.acknowledged] == ["LAU-SMDDP-INSTANCE"]


def test_the_plan_command_prints_severity(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(smddp_on("ml.p3dn.24xlarge", named=["gpu0"])))
    out = io.StringIO()
    assert main(["plan", str(path)], out=out) == 1
    assert "  warning [LAU-SMDDP-INSTANCE] " in out.getvalue()
    assert '{"LAU-SMDDP-INSTANCE": "' in out.getvalue()


def test_synth_error_text_names_severity_and_acknowledgment() -> None:
    violations = violations_of(smddp_on("ml.p3dn.24xlarge", named=["gpu0"]))
    text = str(SpecValidationError(violations, scope="App/Training"))
    first, line = text.splitlines()
    assert first == "1 training-spec violation in App/Training (0 errors, 1 warning):"
    assert line.startswith("  - warning [LAU-SMDDP-INSTANCE] instance_groups[1].instance_type: ")
    assert line.endswith(
        f'acknowledge it: acknowledgments: {{"LAU-SMDDP-INSTANCE": "{ACKNOWLEDGMENT_REASON}"}}'
    )
    errors = violations_of(spec_dict({"max_run": 0}))
    assert str(SpecValidationError(errors)).splitlines()[1].startswith("  - error [API-STOPPING]")


def test_json_keeps_severity_for_warnings_only() -> None:
    (warning,) = violations_of(smddp_on("ml.p3dn.24xlarge", named=["gpu0"]))
    assert warning.to_dict()["severity"] == "warning"
    assert "acknowledgments:" in warning.to_dict()["message"]
    (error,) = violations_of(spec_dict({"max_run": 0}))
    assert "severity" not in error.to_dict() and "acknowledg" not in error.message


# -- validate(spec) judges the spec, not the missing deployment ---------------------------------

WITHOUT_FACTS = spec_dict({"region": DELETE, "role": DELETE, "job_name": DELETE})


def test_validate_without_deployment_reports_no_deployment_facts() -> None:
    assert validate(spec_of(WITHOUT_FACTS)) == []


def test_validate_still_reports_what_the_spec_gets_wrong() -> None:
    wrong = spec_dict(
        {"region": "mars-east-1", "role": "not-an-arn", "job_name": DELETE, "max_run": 0}
    )
    found = {(v.rule, v.path) for v in validate(spec_of(wrong))}
    assert found == {("FW-REGION", "region"), ("API-ROLE", "role"), ("API-STOPPING", "max_run")}


def test_facts_are_required_where_a_request_is_made() -> None:
    """plan() builds the request, and validate() with a deployment judges it: both need them."""
    spec = spec_of(WITHOUT_FACTS)
    assert {v.rule for v in plan(spec).violations} == {"FW-REGION", "API-ROLE"}
    assert {v.rule for v in validate(spec, Deployment(job_name="job"))} == {"FW-REGION", "API-ROLE"}
    facts = Deployment(region="us-west-2", role_arn="arn:aws:iam::111122223333:role/Training")
    assert validate(spec, facts) == [] and plan(spec, facts).request is not None
