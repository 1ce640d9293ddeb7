"""``hetero-train plan``: readable or JSON output, exit 0 or 1."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.cli import main, timestamped_job_name
from hetero_constructs.service.request_validator import botocore_validation_errors
from tests.fixtures.specs import spec_dict

REPO = Path(__file__).parents[2]
EXAMPLE = REPO / "examples" / "specs" / "hetero_torch_distributed.json"


def run(tmp_path: Path, data: Any, *args: str) -> tuple[int, str]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    out = io.StringIO()
    code = main(["plan", str(path), *args], out=out)
    return code, out.getvalue()


def test_plan_prints_the_request(tmp_path: Path) -> None:
    code, text = run(tmp_path, spec_dict())
    assert code == 0
    request = json.loads(text)
    assert request["ResourceConfig"]["InstanceGroups"][1]["InstanceGroupName"] == "gpu"
    assert botocore_validation_errors(request) is None


def test_plan_json_envelope_and_violations(tmp_path: Path) -> None:
    code, text = run(tmp_path, spec_dict(), "--json")
    assert code == 0 and set(json.loads(text)) == {"request"}
    code, text = run(tmp_path, spec_dict({"job_name": "bad_name", "max_runs": 1}), "--json")
    assert code == 1
    violations = json.loads(text)["violations"]
    assert [v["rule"] for v in violations] == ["SPEC-UNKNOWN-KEY", "API-JOB-NAME"]
    assert violations[1]["path"] == "job_name"
    assert 'Given: "bad_name"' in violations[1]["message"]
    assert "Fix:" in violations[1]["message"]


def test_plan_readable_violations(tmp_path: Path) -> None:
    code, text = run(
        tmp_path,
        spec_dict(
            {
                "instance_groups": [
                    {"name": "gpu", "instance_type": "ml.p4d.24xlarg", "instance_count": 2}
                ]
            }
        ),
    )
    assert code == 1
    assert "[API-INSTANCE-TYPE] instance_groups[0].instance_type" in text
    assert 'given:   "ml.p4d.24xlarg"' in text
    assert "fix:     did you mean ml.p4d.24xlarge?" in text


def test_job_name_placeholder_and_region_fallback(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    code, text = run(tmp_path, spec_dict({"job_name": None, "region": None}))
    assert code == 0, text
    request = json.loads(text)
    assert request["TrainingJobName"].startswith("pytorch-training-")
    assert "eu-west-1" in request["AlgorithmSpecification"]["TrainingImage"]


def test_timestamped_job_name_fits() -> None:
    name = timestamped_job_name("b" * 80, datetime(2026, 11, 30, 10, 1, 2, 345000, tzinfo=UTC))
    assert len(name) == 63 and name.endswith("-2026-11-30-10-01-02-345")


def test_missing_file_is_a_violation(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["plan", str(tmp_path / "nope.json"), "--json"], out=out) == 1
    assert json.loads(out.getvalue())["violations"][0]["rule"] == "SPEC-FILE"


def test_console_script_runs_the_example() -> None:
    script = Path(sys.executable).parent / "hetero-train"
    result = subprocess.run(
        [str(script), "plan", str(EXAMPLE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["HyperParameters"]["sagemaker_distribution_instance_groups"]


# -- acknowledged warnings ----------------------------------------------------------------------

#: SMDDP on ml.p3dn.24xlarge: a warning (the SDK lists the type, the SMDDP guide does not).
SMDDP_ON_P3DN = spec_dict(
    {"framework_version": "2.2.0", "py_version": "py310"},
    {
        "instance_groups": [
            {"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
            {"name": "gpu", "instance_type": "ml.p3dn.24xlarge", "instance_count": 2},
        ],
        "distribution": {"pytorchddp": {"enabled": True}, "instance_groups": ["gpu"]},
    },
)
REASON = "p3dn.24xlarge is in the SDK's SMDDP list; validated on our cluster"


def test_plan_lists_the_acknowledged_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = run(tmp_path, SMDDP_ON_P3DN, "--json")
    assert code == 1  # unacknowledged, the warning stops the request
    assert [v["rule"] for v in json.loads(text)["violations"]] == ["LAU-SMDDP-INSTANCE"]

    acknowledged = {**SMDDP_ON_P3DN, "acknowledgments": {"LAU-SMDDP-INSTANCE": REASON}}
    code, text = run(tmp_path, acknowledged, "--json")
    assert code == 0, text
    result = json.loads(text)
    assert set(result) == {"request", "acknowledged"}
    ((item),) = result["acknowledged"]
    assert (item["rule"], item["path"], item["reason"]) == (
        "LAU-SMDDP-INSTANCE",
        "instance_groups[1].instance_type",
        REASON,
    )
    assert item["severity"] == "warning" and "ml.p3dn.24xlarge" in item["message"]

    capsys.readouterr()
    code, text = run(tmp_path, acknowledged)
    assert code == 0 and json.loads(text)["ResourceConfig"]  # stdout: the request alone
    notes = capsys.readouterr().err
    assert (
        "note: acknowledged warning [LAU-SMDDP-INSTANCE] instance_groups[1].instance_type: "
        + REASON
    ) in notes


def test_plan_refuses_to_acknowledge_an_error(tmp_path: Path) -> None:
    data = {**SMDDP_ON_P3DN, "acknowledgments": {"API-INSTANCE-TYPE": REASON}}
    code, text = run(tmp_path, data, "--json")
    assert code == 1
    violations = {v["rule"]: v for v in json.loads(text)["violations"]}
    assert set(violations) == {"ACK-RULE", "LAU-SMDDP-INSTANCE"}  # nothing acknowledged
    assert violations["ACK-RULE"]["path"] == "acknowledgments.API-INSTANCE-TYPE"
    assert "is an error" in violations["ACK-RULE"]["message"]
