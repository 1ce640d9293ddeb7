"""`cdk synth` of an app with violations: exit 1, the violations under the user's path, no
traceback (issue 23, item 6)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import aws_cdk as cdk
import pytest

from hetero_constructs import HeterogeneousTrainingTask, SpecValidationError
from hetero_constructs.constructs import errors
from hetero_constructs.jsii_node import wheel_node
from tests.fixtures.construct_specs import REPO, spec, stack

CDK_CLI = REPO / "node_modules" / ".bin" / "cdk"

# Two distribution groups on ml.g5.xlarge with SMDDP: the group count, the SMDDP instance type
# of each group and a warning (an old framework version for instance groups) all at once.
APP = """
import aws_cdk as cdk
from hetero_constructs import (
    DistributedTraining, Framework, HeterogeneousTrainingJob, InstanceGroup, TrainingSpec,
)

class TrainingStack(cdk.Stack):
    def __init__(self, scope, construct_id, **kwargs):
        super().__init__(scope, construct_id, **kwargs)
        groups = [InstanceGroup("gpu", "ml.g5.xlarge", 2), InstanceGroup("gpu2", "ml.g5.xlarge", 2)]
        HeterogeneousTrainingJob(self, "Training", spec=TrainingSpec(
            framework=Framework.PYTORCH, framework_version="1.9.0", py_version="py38",
            entry_point="train.py", instance_groups=groups,
            distribution=DistributedTraining(
                launchers=DistributedTraining.pytorch_ddp().launchers,
                instance_groups=["gpu", "gpu2"],
            ),
            output_path="s3://my-training-bucket/out/",
        ))

app = cdk.App()
TrainingStack(app, "MyTraining", env=cdk.Environment(region="us-west-2"))
app.synth()
"""


def test_cdk_synth_of_an_app_with_violations(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(textwrap.dedent(APP))
    (tmp_path / "train.py").write_text("print('train')\n")
    env = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "1", "JSII_NODE": str(wheel_node())}
    env.pop(errors.TRACEBACK_VARIABLE, None)
    result = subprocess.run(
        [str(CDK_CLI), "synth", "--quiet", "--app", f"{sys.executable} app.py", "-o", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output and "jsii" not in output and 'File "' not in output
    lines = output.splitlines()
    assert lines[0] == "4 training-spec violations in MyTraining/Training (3 errors, 1 warning):"
    listed = [line.split()[1:3] for line in lines[1:5]]
    assert sorted(listed) == sorted(
        [
            ["error", "[HC-DISTRIBUTION-GROUP-COUNT]"],
            ["error", "[LAU-SMDDP-INSTANCE-UNLISTED]"],
            ["error", "[LAU-SMDDP-INSTANCE-UNLISTED]"],
            ["warning", "[HC-FRAMEWORK-VERSION]"],
        ]
    ), output
    assert '"HC-FRAMEWORK-VERSION": "<why this does not apply' in output
    assert "Training/Task" not in output


def test_a_job_reports_violations_under_its_own_path() -> None:
    from hetero_constructs import HeterogeneousTrainingJob

    with pytest.raises(SpecValidationError) as raised:
        HeterogeneousTrainingJob(stack(), "Job", spec=spec(max_run=0))
    assert raised.value.scope == "Test/Job"
    assert str(raised.value).startswith("1 training-spec violation in Test/Job:")


def test_the_hook_prints_violations_alone_and_passes_other_errors_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[BaseException] = []
    hook = errors._reporting(lambda kind, error, traceback: seen.append(error))
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.delenv(errors.TRACEBACK_VARIABLE, raising=False)
    try:
        HeterogeneousTrainingTask(stack(), "Train", spec=spec(max_run=0))
    except SpecValidationError as error:
        hook(type(error), error, error.__traceback__)
        violation = error
    assert stderr.getvalue().startswith("1 training-spec violation in Test/Train:\n  - error [")
    assert not seen
    other = KeyError("a bug")
    hook(KeyError, other, None)
    assert seen == [other]
    monkeypatch.setenv(errors.TRACEBACK_VARIABLE, "1")
    hook(type(violation), violation, None)
    assert seen == [other, violation]


def test_importing_the_constructs_installs_the_hook_once() -> None:
    assert getattr(sys.excepthook, "_hetero_constructs_report", False)
    installed = sys.excepthook
    errors.report_violations_without_traceback()
    assert sys.excepthook is installed


def test_a_construct_validation_failing_in_synth_is_reported_without_jsii_frames() -> None:
    """A task chained into no state machine fails in aws-cdk-lib's synth, through jsii."""
    app = cdk.App()
    scope = cdk.Stack(app, "Orphan", env=cdk.Environment(region="us-west-2"))
    HeterogeneousTrainingTask(scope, "Train", spec=spec())
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    text = errors.report_text(raised.value)
    assert text is not None and text.startswith("Validation failed with the following errors:")
    assert "[Orphan/Train] The training task Orphan/Train is in no state machine" in text
    assert "at Kernel" not in text
    assert errors.report_text(RuntimeError("something else")) is None


def test_a_failed_policy_validation_report_is_not_followed_by_a_traceback() -> None:
    """cdk-nag's Validations packs print their report, then synth raises through jsii."""
    from jsii.errors import JavaScriptError

    message = "ValidationFailed: Validation failed. A copy of this report can be found in: x.json"
    error = RuntimeError(message)
    error.__cause__ = JavaScriptError("at Kernel._Kernel_ensureSync (program.js:1:1)")
    assert errors.report_text(error) == message.removeprefix("ValidationFailed: ")
    assert errors.report_text(RuntimeError(message)) is None  # not from jsii: a bug to show
