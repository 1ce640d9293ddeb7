"""The synthesized example app: IAM, the request in the definition, the code asset, checks."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from typing import Any

import pytest
from cfnlint import api as cfnlint

from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.file.reader import spec_from_dict
from tests.fixtures.example_app import Synthesized
from tests.fixtures.templates import (
    definitions,
    literal,
    policy_statements,
    resources,
    with_literal_definitions,
)

JOBS = "arn:aws:sagemaker:us-west-2:111122223333:training-job"
DLC = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"


def statements_with(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    def actions(statement: dict[str, Any]) -> list[str]:
        value = statement["Action"]
        return value if isinstance(value, list) else [value]

    return [s for s in statements if action in actions(s)]


def payload(example: Synthesized) -> dict[str, Any]:
    (definition,) = definitions(example.template).values()
    task = definition["States"]["Run training job"]
    assert task["Resource"].endswith(":states:::lambda:invoke.waitForTaskToken")
    return task["Parameters"]["Payload"]  # type: ignore[no-any-return]


def test_the_definition_carries_the_spec_that_plans_to_the_request(example: Synthesized) -> None:
    """The payload holds the spec (not the request: half the size); it plans to the request."""
    assert "request" not in payload(example)
    data = payload(example)
    request = plan(
        spec_from_dict(data["spec"]), Deployment(job_name="hetero-example", **data["deployment"])
    ).request_or_raise()
    assert request["ResourceConfig"]["InstanceGroups"] == [
        {"InstanceGroupName": "data", "InstanceType": "ml.c5.18xlarge", "InstanceCount": 2},
        {"InstanceGroupName": "gpu", "InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
    ]
    (channel,) = request["InputDataConfig"]
    assert channel["DataSource"]["S3DataSource"]["InstanceGroupNames"] == ["data"]
    assert (
        channel["DataSource"]["S3DataSource"]["S3Uri"]
        == "s3://example-training-data/datasets/train/"
    )
    hyperparameters = request["HyperParameters"]
    assert hyperparameters["sagemaker_distribution_instance_groups"] == '["gpu"]'
    assert hyperparameters["sagemaker_torch_distributed_enabled"] == "true"
    assert hyperparameters["sagemaker_submit_directory"].startswith('"s3://cdk-')
    assert request["AlgorithmSpecification"]["TrainingImage"] == DLC
    # The same request the core builds for the same spec and deployment values.
    deployment = payload(example)["deployment"]
    expected = plan(
        example.stack.job.spec, Deployment(job_name="hetero-example", **deployment)
    ).request_or_raise()
    assert request == json.loads(json.dumps(expected))


def test_payload_carries_what_the_submit_lambda_needs(example: Synthesized) -> None:
    data = payload(example)
    assert data["jobNamePrefix"] == "hetero-example"
    assert data["input.$"] == "$"  # the construct's executions: the input is the overrides
    context = data["context"]
    assert context["taskToken.$"] == "$$.Task.Token"
    assert context["executionArn.$"] == "$$.Execution.Id"
    # What identifies the attempt, hence its job name: execution, state entry, retry count.
    assert context["executionStartTime.$"] == "$$.Execution.StartTime"
    assert context["stateEnteredTime.$"] == "$$.State.EnteredTime"
    assert context["retryCount.$"] == "$$.State.RetryCount"
    assert data["controlRoleArn"].startswith("arn:aws:iam::111122223333:role/")
    assert data["runnerId"].startswith("HeteroTrainingExample-")
    # The Lambda validates against the uploaded code object, not a local folder.
    assert data["spec"]["source_dir"] == data["deployment"]["submit_directory"]
    assert data["spec"]["source_dir"].startswith("s3://cdk-hnb659fds-assets-")
    assert set(data["deployment"]) == {"role_arn", "region", "submit_directory", "dlc_image_uri"}


def test_state_machine_logging_tracing_timeouts_retries(example: Synthesized) -> None:
    (machine,) = resources(example.template, "AWS::StepFunctions::StateMachine").values()
    properties = machine["Properties"]
    assert properties["LoggingConfiguration"]["Level"] == "ALL"
    # Execution data carries task tokens and inputs: not logged unless asked for.
    assert properties["LoggingConfiguration"]["IncludeExecutionData"] is False
    assert properties["TracingConfiguration"] == {"Enabled": True}
    assert properties["StateMachineName"] == "hetero-example"
    (definition,) = definitions(example.template).values()
    task = definition["States"]["Run training job"]
    assert task["TimeoutSeconds"] == 4 * 3600 + 6 * 3600  # max_run + completion margin
    # Every capacity attempt (1 + 3 retries), the waits between them (5, 10, 20 min), an hour.
    attempts = 4 * task["TimeoutSeconds"] + (300 + 600 + 1200)
    assert definition["TimeoutSeconds"] == attempts + 3600
    retried = {error for retry in task["Retry"] for error in retry["ErrorEquals"]}
    assert {"Lambda.TooManyRequestsException", "HeteroTraining.Throttled"} <= retried
    assert all(retry["BackoffRate"] == 2 for retry in task["Retry"])
    assert task["Catch"][0]["Next"] == "Training failed"
    failed = definition["States"]["Training failed"]
    assert failed == {
        "Type": "Fail",
        "Comment": failed["Comment"],
        "ErrorPath": "$.Error",
        "CausePath": "$.Cause",
    }
    log_groups = resources(example.template, "AWS::Logs::LogGroup")
    assert all("RetentionInDays" in group["Properties"] for group in log_groups.values())


def test_execution_role_is_least_privilege(example: Synthesized) -> None:
    role_statements = policy_statements(example.template, "TrainingTaskExecutionRole")
    reads = statements_with(role_statements, "s3:GetObject")
    resources_read = [
        r
        for s in reads
        for r in ([s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"])
    ]
    assert "arn:aws:s3:::example-training-data/datasets/train/*" in resources_read
    (code,) = [r for r in resources_read if "cdk-hnb659fds-assets" in r]
    assert code.endswith(".gz") and "*" not in code  # exactly the code object
    (write,) = statements_with(role_statements, "s3:PutObject")
    assert write["Resource"] == "arn:aws:s3:::example-training-data/training-output/*"
    (listing,) = statements_with(role_statements, "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["datasets/train/*"]}}
    (pull,) = statements_with(role_statements, "ecr:BatchGetImage")
    assert pull["Resource"] == "arn:aws:ecr:us-west-2:763104351884:repository/pytorch-training"
    (metrics,) = statements_with(role_statements, "cloudwatch:PutMetricData")
    assert metrics["Condition"] == {
        "StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/TrainingJobs"}
    }
    (streams,) = statements_with(role_statements, "logs:PutLogEvents")
    assert streams["Resource"].endswith(
        ":log-group:/aws/sagemaker/TrainingJobs:log-stream:hetero-example-*"
    )
    every_action = {
        a
        for s in role_statements
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert not any(a.startswith(("kms:", "ec2:")) for a in every_action)  # no keys, no VPC
    assert not any(a.endswith("*") for a in every_action)
    (role,) = [
        r
        for k, r in resources(example.template, "AWS::IAM::Role").items()
        if k.startswith("TrainingTaskExecutionRole")
    ]
    (trust,) = literal(
        role["Properties"]["AssumeRolePolicyDocument"]["Statement"], example.template
    )
    assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    # SageMaker's confused-deputy guidance: only this account's jobs of this prefix.
    assert trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "111122223333"},
        "ArnLike": {"aws:SourceArn": f"{JOBS}/hetero-example-*"},
    }


def test_control_role_is_scoped_to_the_prefix_and_the_spec(example: Synthesized) -> None:
    statements = policy_statements(example.template, "TrainingTaskControlRole")
    (create,) = statements_with(statements, "sagemaker:CreateTrainingJob")
    assert (
        create["Resource"]
        == "arn:aws:sagemaker:us-west-2:111122223333:training-job/hetero-example-*"
    )
    runner_id = payload(example)["runnerId"]
    assert create["Condition"] == {
        "ForAllValues:StringEquals": {
            "sagemaker:InstanceTypes": ["ml.c5.18xlarge", "ml.p4d.24xlarge"]
        },
        "NumericLessThanEquals": {"sagemaker:MaxRuntimeInSeconds": 14400},
        "StringEquals": {"aws:RequestTag/hetero-constructs:runner": runner_id},
    }
    (passing,) = statements_with(statements, "iam:PassRole")
    assert passing["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }
    assert passing["Resource"].startswith("arn:aws:iam::111122223333:role/trainingtaskexecution")
    (report,) = statements_with(statements, "states:SendTaskSuccess")
    assert report["Resource"] == "arn:aws:states:us-west-2:111122223333:stateMachine:hetero-example"
    (describe,) = statements_with(statements, "states:DescribeExecution")
    assert describe["Resource"] == (
        "arn:aws:states:us-west-2:111122223333:execution:hetero-example:*"
    )
    (stop,) = statements_with(statements, "sagemaker:StopTrainingJob")
    assert stop["Resource"] == create["Resource"]


def test_shared_lambdas_hold_no_per_job_permission(example: Synthesized) -> None:
    """What grows per job lives on the job's control role; the shared roles only assume it."""
    for role in ("HeteroTrainingRunnerSubmitRole", "HeteroTrainingRunnerEventsRole"):
        statements = policy_statements(example.template, role)
        actions = {
            a
            for s in statements
            for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        }
        assert not any(a.startswith(("sagemaker:", "states:", "iam:")) for a in actions), role
        (assume,) = statements_with(statements, "sts:AssumeRole")
        assert assume["Resource"].startswith(
            "arn:aws:iam::111122223333:role/hetero-constructs/HeteroTrainingExample-"
        )
        assert assume["Resource"].endswith("/*")
        table = statements_with(statements, "dynamodb:GetItem")
        assert table and not statements_with(statements, "dynamodb:BatchWriteItem")
    (control,) = [
        r
        for k, r in resources(example.template, "AWS::IAM::Role").items()
        if k.startswith("TrainingTaskControlRole")
    ]
    assert control["Properties"]["Path"] == assume["Resource"].removeprefix(
        "arn:aws:iam::111122223333:role"
    ).removesuffix("*")


def test_events_route_job_ends_and_execution_ends(example: Synthesized) -> None:
    rules = resources(example.template, "AWS::Events::Rule").values()
    patterns = [r["Properties"]["EventPattern"] for r in rules if "EventPattern" in r["Properties"]]
    sagemaker = next(p for p in patterns if p["source"] == ["aws.sagemaker"])
    # Routed by the runner's tag on every job: the pattern does not grow with the jobs.
    assert sagemaker["detail"]["Tags"] == {
        "hetero-constructs:runner": [payload(example)["runnerId"]]
    }
    assert sagemaker["detail"]["TrainingJobStatus"] == ["Completed", "Failed", "Stopped"]
    states = next(p for p in patterns if p["source"] == ["aws.states"])
    assert states["detail"]["status"] == ["ABORTED", "TIMED_OUT", "FAILED"]
    (schedule,) = [r for r in rules if "ScheduleExpression" in r["Properties"]]
    assert schedule["Properties"]["ScheduleExpression"] == "rate(5 minutes)"
    assert json.loads(schedule["Properties"]["Targets"][0]["Input"]) == {"action": "reconcile"}
    for rule in rules:
        (target,) = rule["Properties"]["Targets"]
        assert "DeadLetterConfig" in target  # an event that cannot be delivered is kept


def test_token_table(example: Synthesized) -> None:
    (table,) = resources(example.template, "AWS::DynamoDB::Table").values()
    properties = table["Properties"]
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert properties["SSESpecification"]["SSEEnabled"] is True


def test_one_submit_function_on_the_newest_runtime(example: Synthesized) -> None:
    functions = resources(example.template, "AWS::Lambda::Function")
    assert sorted(f["Properties"]["Handler"] for f in functions.values()) == [
        "events.handler",
        "submit.handler",
    ]
    assert {f["Properties"]["Runtime"] for f in functions.values()} == {"python3.14"}


def test_code_asset_is_a_tar_gz_with_the_entry_point_at_its_root(example: Synthesized) -> None:
    (archive,) = example.outdir.glob("asset.*.tar.gz")
    data = archive.read_bytes()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:  # as the toolkit opens it
        names = tar.getnames()
        members = tar.getmembers()
    assert "train.py" in names
    assert "hetero_runtime/__init__.py" in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert all(m.mtime == 0 and m.uid == 0 and m.gid == 0 and m.uname == "" for m in members)
    assert gzip.decompress(data)  # plain gzip
    assert data[4:8] == b"\0\0\0\0"  # no timestamp in the gzip header


def test_cdk_nag_has_no_unacknowledged_findings(example: Synthesized) -> None:
    report = json.loads((example.outdir / "validation-report.json").read_text())
    packs = {r["pluginName"]: r for r in report["pluginReports"]}
    assert set(packs) >= {"AwsSolutions", "Serverless"}
    suppressed = []
    for name in ("AwsSolutions", "Serverless"):
        assert packs[name]["conclusion"] == "success", packs[name]["violations"]
        assert packs[name]["violations"] == []
        suppressed += packs[name]["suppressedViolations"]
    assert suppressed, "the acknowledgments should be exercised"
    for finding in suppressed:
        pack = finding["ruleName"].split("-", 1)[0]
        assert finding["acknowledgedId"] == f"{pack}::{finding['ruleName']}"
        assert len(finding["reason"]) > 40
    # No stale acknowledgment: every one recorded names a finding that exists.
    recorded = {
        finding_id
        for path in example.outdir.glob("*.metadata.json")  # every stack of the app
        for entries in json.loads(path.read_text()).values()
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules"
        for finding_id in entry["data"]
        if not finding_id.startswith("hetero-constructs-deployability::")
    }
    assert recorded == {finding["acknowledgedId"] for finding in suppressed}


@pytest.mark.parametrize("stack", ["HeteroTrainingExample", "HeteroTrainingPipeline"])
def test_cfn_lint_is_clean(example: Synthesized, stack: str) -> None:
    synthesized = json.loads((example.outdir / f"{stack}.template.json").read_text())
    template = with_literal_definitions(synthesized)
    matches = cfnlint.lint(json.dumps(template), config=cfnlint.ManualArgs(regions=["us-west-2"]))
    assert [f"{m.rule.id}: {m.message}" for m in matches] == []
