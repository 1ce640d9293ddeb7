"""Hand-built CDK stacks, deployed and run as a user's stack would be (see stacks.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest

from hetero_constructs.local import LocalCloud
from tests.fixtures.local_stacks import Synthesized

CAPACITY = "CapacityError: Unable to provision requested ML compute capacity."


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(simulate="Completed") as local:
        yield local


def test_python_assets_run_in_process_with_isolated_modules(
    cloud: LocalCloud, stacks: Synthesized
) -> None:
    refs = cloud.deploy(stacks.path("Orders"))
    assert cloud.region == "eu-west-1"  # from the cdk.out manifest's environment
    result = cloud.run(None, {"order": "o-1"})
    assert result.status == "SUCCEEDED"
    # Both assets hold index.py and helper.py: each function imported its own.
    assert result.output["recorded"]["origin"] == "orders"
    assert result.output["audit"]["origin"] == "audit"
    assert result.output["inline"] == {"inline": True}  # Code.ZipFile
    # Environment variables resolved to the deployed resources (a queue URL for a Ref).
    queue_url = result.output["recorded"]["queue"]
    assert queue_url == refs["Failures8A3E1A2F"]
    assert queue_url.startswith("https://sqs.eu-west-1.amazonaws.com/123456789012/")
    item = boto3.client("dynamodb", region_name="eu-west-1").get_item(
        TableName=_ref(refs, "Orders"), Key={"pk": {"S": "o-1"}}
    )
    assert "Item" in item


def _ref(refs: dict[str, str], prefix: str) -> str:
    return next(value for key, value in refs.items() if key.startswith(prefix))


def test_async_failures_retry_then_go_to_the_destination(
    cloud: LocalCloud, stacks: Synthesized
) -> None:
    refs = cloud.deploy(stacks.path("Orders"))
    result = cloud.run(None, {"order": "o-2"})
    assert result.status == "SUCCEEDED"
    # The SUCCEEDED status event matched the rule; the target fails: 1 + 1 retry, then SQS.
    (delivery,) = [d for d in cloud.bus.deliveries if "OrdersSucceeded" in d.rule]
    assert delivery.event["detail"]["status"] == "SUCCEEDED"
    flaky = [i for i in cloud.lambdas.invocations if "Flaky" in i.function]
    assert [i.error for i in flaky] == ["Flaky", "Flaky"]
    sqs = boto3.client("sqs", region_name="eu-west-1")
    messages = sqs.receive_message(QueueUrl=_ref(refs, "Failures"))["Messages"]
    record = json.loads(messages[0]["Body"])
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 2
    assert record["responsePayload"]["errorType"] == "Flaky"


def test_a_lambda_failing_before_its_work_is_caught(cloud: LocalCloud, stacks: Synthesized) -> None:
    refs = cloud.deploy(stacks.path("Orders"))
    fault = cloud.faults.fail_lambda("index.handler", after_work=False, error_type="Custom.Boom")
    result = cloud.run(None, {"order": "never"})
    assert result.status == "SUCCEEDED"
    assert result.output["failure"]["Error"] == "Custom.Boom"  # the Catch ran
    assert fault.times == 0
    table = _ref(refs, "Orders")
    dynamodb = boto3.client("dynamodb", region_name="eu-west-1")
    assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": "never"}})


def test_jsonata_states_and_the_context_object(cloud: LocalCloud, stacks: Synthesized) -> None:
    cloud.deploy(stacks.path("Jsonata"))
    items = [{"name": "a", "price": 2}, {"name": "b", "price": 3.5}]
    result = cloud.run(None, {"items": items}, name="priced")
    assert result.status == "SUCCEEDED", result.cause
    order = result.output["order"]
    assert order["total"] == 5.5 and order["names"] == ["a", "b"]
    assert order["execution"] == "priced" and order["state"] == "Prepare"
    assert order["retries"] == 0
    assert order["started"].endswith("Z") and "T" in order["started"]
    assert order["machine"] == cloud.state_machine()
    assert result.output["audited"] == 5.5  # from the Lambda's result, $states.result


def test_nested_execution_returns_the_child_output(cloud: LocalCloud, stacks: Synthesized) -> None:
    cloud.deploy(stacks.path("Nested"))
    parent = cloud.state_machine("local-parent")
    result = cloud.run(parent, {"wait": 0, "value": 21}, name="parent-run")
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["answer"]["doubled"] == 42
    # associate_with_parent: the child's input names the parent execution.
    assert result.output["answer"]["parent"] == result.execution_arn


def test_aborting_the_parent_aborts_the_child(cloud: LocalCloud, stacks: Synthesized) -> None:
    cloud.deploy(stacks.path("Nested"))
    stepfunctions = cloud.client("stepfunctions")
    started = stepfunctions.start_execution(
        stateMachineArn=cloud.state_machine("local-parent"),
        name="to-abort",
        input=json.dumps({"wait": 30, "value": 1}),
    )
    child_machine = cloud.state_machine("local-child")
    children = _wait_for(
        lambda: stepfunctions.list_executions(stateMachineArn=child_machine)["executions"]
    )
    stepfunctions.stop_execution(executionArn=started["executionArn"])
    assert (
        stepfunctions.describe_execution(executionArn=started["executionArn"])["status"]
        == "ABORTED"
    )
    child = children[0]["executionArn"]
    assert _wait_for(
        lambda: stepfunctions.describe_execution(executionArn=child)["status"] == "ABORTED"
    )
    assert cloud.history(child)[-1]["type"] == "ExecutionAborted"
    statuses = [
        (e["detail"]["stateMachineArn"], e["detail"]["status"])
        for e in cloud.bus.events
        if e["source"] == "aws.states" and e["detail"]["status"] != "RUNNING"
    ]
    assert (cloud.state_machine("local-parent"), "ABORTED") in statuses
    assert (child_machine, "ABORTED") in statuses


def _wait_for(probe, seconds: float = 60.0):  # type: ignore[no-untyped-def]
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_vpc_ids_resolve_and_the_node_custom_resource_is_skipped(
    cloud: LocalCloud, stacks: Synthesized
) -> None:
    cloud.deploy(stacks.path("Network"))
    result = cloud.run(None, {})
    assert result.status == "SUCCEEDED"
    assert result.output["SecurityGroupIds"][0].startswith("sg-")
    assert result.output["Subnets"][0].startswith("subnet-")
    assert result.output["VpcId"].startswith("vpc-")
    notes = "\n".join(cloud.notes)
    assert "nodejs" in notes and "not run locally" in notes
    assert "Custom::VpcRestrictDefaultSG" in notes


def test_create_model_and_register_it(cloud: LocalCloud, stacks: Synthesized) -> None:
    cloud.deploy(stacks.path("Model"))
    artifacts = "s3://bucket/out/job/output/model.tar.gz"
    result = cloud.run(None, {"name": "model-1", "artifacts": artifacts})
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["model"]["ModelArn"].endswith(":model/model-1")
    package = result.output["package"]["ModelPackageArn"]
    sagemaker = cloud.client("sagemaker")
    described = sagemaker.describe_model_package(ModelPackageName=package)
    assert described["ModelPackageGroupName"] == "local-models"
    model = sagemaker.describe_model(ModelName="model-1")
    assert model["PrimaryContainer"]["ModelDataUrl"] == artifacts


# -- a generic training flow: scripted attempts, events, reconciler, faults ---------------


@pytest.fixture
def training(cloud: LocalCloud, stacks: Synthesized) -> LocalCloud:
    cloud.deploy(stacks.path("Training"))
    return cloud


def test_capacity_failure_then_quota_then_success(training: LocalCloud) -> None:
    result = training.run(
        None, name="attempts", outcomes=[f"Failed:{CAPACITY}", "ResourceLimitExceeded", "Completed"]
    )
    assert result.status == "SUCCEEDED", result.cause
    # One job per attempt, named from $$.State.RetryCount; the quota refusal created none.
    assert [(j.name, j.status) for j in result.jobs] == [
        ("local-attempts-0", "Failed"),
        ("local-attempts-1", "ResourceLimitExceeded"),
        ("local-attempts-2", "Completed"),
    ]
    assert result.jobs[0].failure_reason == CAPACITY
    assert result.jobs[2].instance_types == ["ml.c5.xlarge", "ml.p4d.24xlarge"]
    assert result.output["training"]["TrainingJobName"] == "local-attempts-2"
    assert [j["TrainingJobName"] for j in result.training_jobs] == [
        "local-attempts-0",
        "local-attempts-2",
    ]
    # The exact requests, as the Lambda sent them.
    assert result.jobs[2].request["Tags"] == [{"Key": "execution", "Value": "attempts"}]
    assert len(result.submitted_requests) == 3


def test_failure_keeps_its_cause(training: LocalCloud) -> None:
    failures = [f"Failed:AlgorithmError: exit {n}" for n in range(4)]  # 1 + 3 retries
    result = training.run(None, name="failing", outcomes=failures)
    assert result.status == "FAILED"
    assert result.error == "TrainingFailed"
    assert result.cause == "AlgorithmError: exit 3"  # SendTaskFailure's cause, kept


def test_a_lost_event_is_recovered_by_the_scheduled_reconciler(training: LocalCloud) -> None:
    dropped = training.faults.drop_events(
        {"source": ["aws.sagemaker"], "detail": {"TrainingJobStatus": ["Completed"]}}
    )
    result = training.run(None, name="lost", stuck_after=0.5)
    assert result.status == "SUCCEEDED"
    assert dropped.times == 0
    assert any(d.outcome == "dropped" for d in training.bus.deliveries)
    reconciles = [i for i in training.lambdas.invocations if "Reconcile" in i.function]
    assert reconciles and reconciles[0].event["detail-type"] == "Scheduled Event"


def test_duplicated_events_and_explicit_reconciliation(training: LocalCloud) -> None:
    training.faults.duplicate_events({"source": ["aws.sagemaker"]}, times=5)
    result = training.run(None, name="twice", reconcile_every=0.1)
    assert result.status == "SUCCEEDED"
    finishes = [i for i in training.lambdas.invocations if "Finish" in i.function]
    assert len(finishes) >= 2 and all(i.error is None for i in finishes)
    assert training.fire_schedules() == 1


def test_a_throttled_put_item_is_retried(training: LocalCloud) -> None:
    throttle = training.faults.throttle("dynamodb", "PutItem")
    result = training.run(None, name="throttled")
    assert result.status == "SUCCEEDED"
    assert throttle.times == 0
    submits = [i.error for i in training.lambdas.invocations if "Submit" in i.function]
    assert submits == ["ProvisionedThroughputExceededException", None]


def test_stop_while_a_lambda_runs(training: LocalCloud) -> None:
    training.faults.stop_execution_during("submit.handler")
    result = training.run(None, name="stopped-early")
    assert result.status == "ABORTED"
    assert [e["type"] for e in result.history][-1] == "ExecutionAborted"
    (job,) = result.jobs  # the Lambda went on and created its job
    assert job.status == "InProgress"
    (aborted,) = [
        e
        for e in training.bus.events
        if e["source"] == "aws.states" and e["detail"]["status"] == "ABORTED"
    ]
    assert aborted["detail-type"] == "Step Functions Execution Status Change"
    assert aborted["detail"]["executionArn"] == result.execution_arn
    assert aborted["detail"]["name"] == "stopped-early"
