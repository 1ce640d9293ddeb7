"""An execution that times out or fails while its training job runs stops the job.

The task sits in a user's state machine: one with a ``timeout`` (the execution ends
``TIMED_OUT``; the timeout elapses when the test says so, once the job runs: ``Timeouts``),
one with a Parallel whose other branch fails (``FAILED`` while the training branch still
waits). Either end's "Step Functions Execution Status Change" event reaches the events Lambda,
which stops the job; when that event is lost, one reconcile pass does.

``LocalCloud.run`` ends a job as soon as the run's code is idle, long before an execution could
time out or fail around it: these runs are started directly and only delivered (the job runs on
until something stops it, as a real one would).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from hetero_constructs import HeterogeneousTrainingTask
from hetero_constructs.contract import lifecycle
from hetero_constructs.local import LocalCloud
from tests.fixtures.construct_specs import spec
from tests.fixtures.harness import Harness, reconcile_passes, record_calls
from tests.fixtures.timeouts import Timeouts

#: The timed state machine's timeout. It elapses when the test says so, once the job runs
#: (the ``timeouts`` fixture): no speed of the machine is assumed.
TIMEOUT_SECONDS = 3600
#: The token-timeout task's max_run (the parameter's default, which the local cloud deploys) and
#: margin: its wait times out after their sum, 4 s (neither alone, nor "13", the two as text).
TOKEN_MAX_RUN = 1
TOKEN_MARGIN = 3


class EndingStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id, env=cdk.Environment(region="us-west-2"))
        timed = HeterogeneousTrainingTask(self, "Timed", job_name_prefix="ends-timed", spec=spec())
        sfn.StateMachine(
            self,
            "TimedMachine",
            state_machine_name="timed-out",
            definition_body=sfn.DefinitionBody.from_chainable(timed),
            timeout=cdk.Duration.seconds(TIMEOUT_SECONDS),
        )
        train = HeterogeneousTrainingTask(
            self, "Branch", job_name_prefix="ends-branch", spec=spec()
        )
        # The other branch waits for a word from the test (its token, sent to a queue), so that
        # it fails once the job is running, however slow the machine.
        gate = sqs.Queue(self, "Gate")
        sibling = tasks.SqsSendMessage(
            self,
            "Prepare",
            queue=gate,
            integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
            message_body=sfn.TaskInput.from_object({"token": sfn.JsonPath.task_token}),
        )
        both = sfn.Parallel(self, "Train and prepare").branch(train).branch(sibling)
        sfn.StateMachine(
            self,
            "FailingMachine",
            state_machine_name="sibling-failed",
            definition_body=sfn.DefinitionBody.from_chainable(both),
        )
        # A deploy-time max_run: the wait's timeout is max_run + margin, computed at run time.
        max_run = cdk.CfnParameter(self, "MaxRun", type="Number", default=TOKEN_MAX_RUN)
        bounded = HeterogeneousTrainingTask(
            self,
            "Bounded",
            job_name_prefix="ends-bounded",
            spec=spec(max_run=cdk.Token.as_number(max_run.value_as_number)),
            completion_margin=cdk.Duration.seconds(TOKEN_MARGIN),
            query_language=sfn.QueryLanguage.JSONATA,
        )
        sfn.StateMachine(
            self,
            "BoundedMachine",
            state_machine_name="token-timeout",
            definition_body=sfn.DefinitionBody.from_chainable(bounded),
            query_language=sfn.QueryLanguage.JSONATA,
        )


@pytest.fixture(scope="module")
def ending(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthesized template's path."""
    outdir = tmp_path_factory.mktemp("ending.out")
    app = cdk.App(outdir=str(outdir))
    EndingStack(app, "Ending")
    app.synth()
    return outdir / "Ending.template.json"


@pytest.fixture
def harness(ending: Path, timeouts: Timeouts) -> Iterator[Harness]:
    with LocalCloud(simulate="Completed") as cloud:
        cloud.deploy(ending)
        events = cloud.lambdas.find("events.handler")
        harness = Harness(cloud, "", events.environment["TOKEN_TABLE"], events.name)
        record_calls(harness)
        yield harness


def run_to_its_end(
    cloud: LocalCloud, machine: str, name: str, timeouts: Timeouts | None = None
) -> dict[str, Any]:
    """Start an execution and deliver what it causes until it has ended; its jobs run on.
    ``timeouts``: its time is up once its job runs (the submit has returned)."""
    stepfunctions = cloud.client("stepfunctions")
    arn = stepfunctions.start_execution(
        stateMachineArn=cloud.state_machine(machine), name=name, input="{}"
    )["executionArn"]
    # Only a hang runs into this: every step waits on what the run does, not on its speed.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        cloud.deliver_events()
        if machine == "sibling-failed":
            _fail_the_sibling_once_the_job_runs(cloud)
        if timeouts is not None and _job_submitted(cloud, arn):
            timeouts.elapse()
        described = dict(stepfunctions.describe_execution(executionArn=arn))
        # The status changes a moment before the end's event is sent.
        if described["status"] != "RUNNING" and _end_event_sent(cloud, arn):
            cloud.settle()  # the end's event, and what it causes
            return described
        time.sleep(0.02)
    raise AssertionError(f"{name} did not end")


def _job_submitted(cloud: LocalCloud, execution_arn: str) -> bool:
    """The run's job runs and the task waits on its token (its submit call returned)."""
    if not cloud.training.running():
        return False
    return "TaskSubmitted" in [e["type"] for e in cloud.history(execution_arn)]


def _fail_the_sibling_once_the_job_runs(cloud: LocalCloud) -> None:
    if not cloud.training.running() or cloud.lambdas.running():
        return
    # A session of its own: the harness records (as reports) only the handlers' calls.
    session = boto3.session.Session(region_name=cloud.region)
    sqs_client = session.client("sqs")
    (queue,) = [url for url in sqs_client.list_queues()["QueueUrls"] if "-Gate" in url]
    for message in sqs_client.receive_message(QueueUrl=queue).get("Messages", []):
        token = json.loads(message["Body"])["token"]
        session.client("stepfunctions").send_task_failure(
            taskToken=token, error="Sibling.Failed", cause="the other branch"
        )


def _end_event_sent(cloud: LocalCloud, execution_arn: str) -> bool:
    return any(
        event["source"] == lifecycle.EXECUTION_EVENT_SOURCE
        and event["detail"]["executionArn"] == execution_arn
        and event["detail"]["status"] != "RUNNING"
        for event in list(cloud.bus.events)
    )


def the_job(harness: Harness, described: dict[str, Any]) -> str:
    """The run's one job, which was running when the execution ended."""
    history = [e["type"] for e in harness.cloud.history(described["executionArn"])]
    end = {"TIMED_OUT": "ExecutionTimedOut", "FAILED": "ExecutionFailed"}[described["status"]]
    assert history[-1] == end, history  # nothing is recorded after the end
    assert history.index("TaskSubmitted") < history.index(end), "the job came too late"
    (attempt,) = harness.cloud.training.attempts
    return attempt.name


ENDS = [
    pytest.param("timed-out", "TIMED_OUT", None, id="timed-out"),
    pytest.param("sibling-failed", "FAILED", "Sibling.Failed", id="sibling-failed"),
]


@pytest.mark.parametrize(("machine", "status", "error"), ENDS)
def test_the_execution_s_end_stops_its_running_job(
    harness: Harness, timeouts: Timeouts, machine: str, status: str, error: str | None
) -> None:
    cloud = harness.cloud
    described = run_to_its_end(cloud, machine, f"{machine}-event", timeouts)
    assert (described["status"], described.get("error")) == (status, error)
    job = the_job(harness, described)
    ends = [
        d
        for d in cloud.bus.deliveries
        if d.event["source"] == lifecycle.EXECUTION_EVENT_SOURCE and d.outcome == "delivered"
    ]
    assert [d.event["detail"]["status"] for d in ends] == [status]
    assert cloud.training.stopped_jobs == [job]  # by the events Lambda, on that event
    assert reconcile_passes(cloud) == 0
    assert harness.status(job) == "Stopping"
    harness.stopped_jobs_end()
    assert harness.status(job) == "Stopped"
    assert harness.job_items() == []  # its Stopped event settled it
    assert harness.reports() == []  # the task ended with its execution: nobody to tell


@pytest.mark.parametrize(("machine", "status", "error"), ENDS)
def test_a_lost_end_event_is_made_up_by_one_reconcile_pass(
    harness: Harness, timeouts: Timeouts, machine: str, status: str, error: str | None
) -> None:
    cloud = harness.cloud
    dropped = cloud.faults.drop_events(
        {"source": [lifecycle.EXECUTION_EVENT_SOURCE], "detail": {"status": [status]}}
    )
    described = run_to_its_end(cloud, machine, f"{machine}-lost", timeouts)
    assert (described["status"], described.get("error")) == (status, error)
    assert dropped.times == 0
    # Nobody heard of the execution's end: the job runs on until the reconciler's pass.
    harness.orphan_is_stopped_by_one_reconcile_pass(the_job(harness, described))


def test_a_token_max_run_times_the_task_out_after_max_run_plus_the_margin(
    harness: Harness,
) -> None:
    cloud = harness.cloud
    described = run_to_its_end(cloud, "token-timeout", "bounded")
    assert (described["status"], described.get("error")) == ("FAILED", "States.Timeout")
    history = cloud.history(described["executionArn"])
    (entered,) = [e["timestamp"] for e in history if e["type"] == "TaskStateEntered"]
    (timed_out,) = [e["timestamp"] for e in history if e["type"] == "TaskTimedOut"]
    waited = (timed_out - entered).total_seconds()
    # Their sum, 4 s: not "13", the two joined as text (an upper bound no slowness reaches).
    assert TOKEN_MAX_RUN + TOKEN_MARGIN <= waited < 10 * TOKEN_MAX_RUN + TOKEN_MARGIN, waited
    # The execution's end stops the job the task no longer waits for.
    (attempt,) = cloud.training.attempts
    assert cloud.training.stopped_jobs == [attempt.name]
    harness.stopped_jobs_end()
    assert harness.job_items() == []
    assert harness.reports() == []
