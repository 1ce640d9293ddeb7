"""A deployed training stack as ``hetero-train`` sees it, in moto, advanced by the test.

The state machine has the construct's shape (a ``lambda:invoke.waitForTaskToken`` task whose
payload carries ``spec``, ``request``, ``deployment`` and ``jobNamePrefix``, a Fail state with
the error and cause, a Succeed state), and moto's interpreter runs it. moto does not run the
Lambda, so the test plays the stack's part: it creates the tagged training jobs, moves them
through their secondary statuses, writes their hosts' CloudWatch logs and reports the job's end
to the waiting task, as the submit and events Lambdas would.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from hetero_constructs.cli.logs import TRAINING_LOG_GROUP
from hetero_constructs.cli.runs import ATTEMPT_TAG, EXECUTION_TAG
from hetero_constructs.cli.targets import STATE_MACHINE_OUTPUT_PREFIX
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.run.naming import preview_job_name
from hetero_constructs.spec.file.reader import read_spec
from tests.core.specs import ROLE, spec_dict

ACCOUNT = "123456789012"
REGION = "us-west-2"
STACK = "HeteroTraining"
CONSTRUCT_PATH = f"{STACK}/Training"
PREFIX = "hetero-training"
MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
# The seed's example of how hosts fall into groups: numbers do not follow the groups' order.
HOSTS = {"algo-1": "gpu", "algo-2": "data", "algo-3": "gpu", "algo-4": "data"}


def spec() -> dict[str, Any]:
    return spec_dict({"region": REGION})


def definition(function_arn: str) -> dict[str, Any]:
    deployment = {"region": REGION, "role_arn": ROLE}
    request = plan(
        read_spec(spec()).spec_or_raise(), Deployment(job_name=f"{PREFIX}-x", **deployment)
    ).request_or_raise()
    return {
        "StartAt": "Run training job",
        "States": {
            "Run training job": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {
                    "FunctionName": function_arn,
                    "Payload": {
                        "request": request,
                        "spec": spec(),
                        "deployment": deployment,
                        "jobNamePrefix": PREFIX,
                        "tokenTtlSeconds": 3600,
                        "input.$": "$",
                        "executionName.$": "$$.Execution.Name",
                        "executionArn.$": "$$.Execution.Id",
                        "taskToken.$": "$$.Task.Token",
                    },
                },
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Training failed"}],
                "Next": "Training completed",
            },
            "Training failed": {"Type": "Fail", "ErrorPath": "$.Error", "CausePath": "$.Cause"},
            "Training completed": {"Type": "Succeed"},
        },
    }


@contextlib.contextmanager
def moto_gaps() -> Iterator[None]:
    """What moto lacks and the service has: StopTrainingJob, SendTaskFailure's cause, and an
    execution that is ABORTED as soon as StopExecution returns."""
    from moto.core.responses import ActionResult, EmptyResult
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.responses import SageMakerResponse
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.backend.execution import (
        BaseExecutionWorkerCommunication,
        Execution,
    )
    from moto.stepfunctions.responses import StepFunctionResponse

    def stop_training_job(response: Any) -> Any:
        name = response._get_param("TrainingJobName")
        job = response.sagemaker_backend.training_jobs[name]
        if job.training_job_status != "InProgress":
            raise ValidationError(message=f"The job {name} is not in progress")
        job.training_job_status = job.secondary_status = "Stopping"
        return ActionResult({})

    def send_task_failure(response: Any) -> Any:
        response.stepfunction_backend.send_task_failure(
            response._get_param("taskToken"),
            error=response._get_param("error"),
            cause=response._get_param("cause"),
        )
        return EmptyResult()

    original_stop = Execution.stop

    def stop_execution(execution: Any, stop_date: datetime, error: Any, cause: Any) -> None:
        # Marked first: the interpreter's thread ends the program as soon as it is stopped.
        if execution.exec_status == ExecutionStatus.RUNNING:
            execution.exec_status = ExecutionStatus.ABORTED
            execution.stop_date = stop_date
        original_stop(execution, stop_date, error, cause)

    original_reflect = BaseExecutionWorkerCommunication._reflect_execution_status

    def reflect(communication: Any) -> None:
        # The stopped program's own end must not overwrite ABORTED.
        if communication.execution.exec_status != ExecutionStatus.ABORTED:
            original_reflect(communication)

    BaseExecutionWorkerCommunication._reflect_execution_status = reflect  # type: ignore[method-assign]
    saved = (
        SageMakerResponse.__dict__.get("stop_training_job"),
        StepFunctionResponse.send_task_failure,
    )
    Execution.stop = stop_execution  # type: ignore[method-assign]
    SageMakerResponse.stop_training_job = stop_training_job  # type: ignore[attr-defined]
    StepFunctionResponse.send_task_failure = send_task_failure  # type: ignore[method-assign]
    try:
        yield
    finally:
        if saved[0] is None:
            del SageMakerResponse.stop_training_job  # type: ignore[attr-defined]
        else:
            SageMakerResponse.stop_training_job = saved[0]  # type: ignore[attr-defined]
        StepFunctionResponse.send_task_failure = saved[1]  # type: ignore[method-assign]
        Execution.stop = original_stop  # type: ignore[method-assign]
        BaseExecutionWorkerCommunication._reflect_execution_status = original_reflect  # type: ignore[method-assign]


def _backend_job(name: str) -> Any:
    from moto.sagemaker.models import sagemaker_backends

    return sagemaker_backends[ACCOUNT][REGION].training_jobs[name]


class FakeStack:
    """The stack deployed into moto, and the test's hand on its training jobs."""

    def __init__(self, session: Any, endpoint_url: str | None = None) -> None:
        def client(service: str) -> Any:
            return session.client(service, region_name=REGION, endpoint_url=endpoint_url)

        self.stepfunctions = client("stepfunctions")
        self.sagemaker = client("sagemaker")
        self.logs = client("logs")
        self.iam = client("iam")
        self.awslambda = client("lambda")
        self.cloudformation = client("cloudformation")
        self.state_machine_arn = ""

    def deploy(self) -> str:
        role = self.iam.create_role(RoleName="fake-stack", AssumeRolePolicyDocument="{}")
        role_arn = role["Role"]["Arn"]
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("submit.py", "def handler(event, context):\n    return {}\n")
        function = self.awslambda.create_function(
            FunctionName="submit",
            Runtime="python3.12",
            Role=role_arn,
            Handler="submit.handler",
            Code={"ZipFile": archive.getvalue()},
        )
        self.state_machine_arn = self.stepfunctions.create_state_machine(
            name=PREFIX,
            definition=json.dumps(definition(function["FunctionArn"])),
            roleArn=role_arn,
        )["stateMachineArn"]
        template = {
            "Resources": {"AlarmTopic": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {
                "TrainingStateMachineArnOutputA1B2C3": {
                    "Value": self.state_machine_arn,
                    "Description": f"{STATE_MACHINE_OUTPUT_PREFIX}{CONSTRUCT_PATH}",
                }
            },
        }
        self.cloudformation.create_stack(StackName=STACK, TemplateBody=json.dumps(template))
        self.logs.create_log_group(logGroupName=TRAINING_LOG_GROUP)
        return self.state_machine_arn

    def execution_arn(self, name: str) -> str:
        return self.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"

    def submitted(self, execution_arn: str, timeout: float = 20.0) -> dict[str, Any]:
        """The submit task's payload, once the execution has scheduled it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                events = self.stepfunctions.get_execution_history(executionArn=execution_arn)
            except self.stepfunctions.exceptions.ExecutionDoesNotExist:
                events = {"events": []}
            for event in events["events"]:
                if event["type"] == "TaskScheduled":
                    parameters = json.loads(event["taskScheduledEventDetails"]["parameters"])
                    return dict(parameters["Payload"])
            time.sleep(0.02)
        raise AssertionError(f"{execution_arn} never scheduled its submit task")

    # -- the training job -------------------------------------------------------------------

    def create_job(self, execution_arn: str, attempt: int = 0) -> str:
        payload = self.submitted(execution_arn)
        prefix = PREFIX if attempt == 0 else f"{PREFIX}-retry{attempt}"
        name = preview_job_name(prefix, payload["executionName"])
        request = {**payload["request"], "TrainingJobName": name}
        request["Tags"] = [
            *request.get("Tags", []),
            {"Key": EXECUTION_TAG, "Value": execution_arn},
            {"Key": ATTEMPT_TAG, "Value": str(attempt)},
        ]
        self.sagemaker.create_training_job(**request)
        job = _backend_job(name)
        job.training_job_status = "InProgress"
        job.secondary_status = "Starting"
        job.training_start_time = job.training_end_time = None
        job.secondary_status_transitions = [
            {
                "Status": "Starting",
                "StartTime": job.creation_time,
                "StatusMessage": "Preparing the instances for training",
            }
        ]
        return name

    def advance(self, name: str, status: str, message: str, at: datetime | None = None) -> None:
        job = _backend_job(name)
        at = at or datetime.now(UTC)
        job.secondary_status_transitions[-1]["EndTime"] = at
        job.secondary_status_transitions.append(
            {"Status": status, "StartTime": at, "StatusMessage": message}
        )
        job.secondary_status = status
        if status == "Training":
            job.training_start_time = at

    def log(self, name: str, lines: list[tuple[str, float, str]], start: datetime) -> None:
        """Write ``(host, seconds after start, message)`` lines, host by host."""
        epoch = int(start.timestamp())
        streams: dict[str, list[dict[str, Any]]] = {}
        for host, offset, message in lines:
            stamp = int((start + timedelta(seconds=offset)).timestamp() * 1000)
            streams.setdefault(host, []).append({"timestamp": stamp, "message": message})
        for host, events in streams.items():
            stream = f"{name}/{host}-{epoch}"
            with contextlib.suppress(self.logs.exceptions.ResourceAlreadyExistsException):
                self.logs.create_log_stream(logGroupName=TRAINING_LOG_GROUP, logStreamName=stream)
            self.logs.put_log_events(
                logGroupName=TRAINING_LOG_GROUP,
                logStreamName=stream,
                logEvents=sorted(events, key=lambda e: e["timestamp"]),
            )

    def finish(
        self,
        execution_arn: str,
        name: str,
        status: str = "Completed",
        failure_reason: str | None = None,
        billable: int = 600,
    ) -> None:
        """End the job and report it to the waiting task, as the events Lambda does."""
        job = _backend_job(name)
        now = datetime.now(UTC)
        self.advance(name, status, failure_reason or f"Training job {status.lower()}", now)
        job.training_job_status = status
        job.training_end_time = now
        # Attributes moto's job does not have yet: added in one step, by a new __dict__, since
        # the command under test may be describing the job in another thread, and moto's
        # describe iterates the job's __dict__ ("dictionary changed size during iteration").
        added: dict[str, Any] = {"billable_time_in_seconds": billable}
        if failure_reason:
            added["failure_reason"] = failure_reason
        job.__dict__ = {**job.__dict__, **added}
        token = self.submitted(execution_arn)["taskToken"]
        details = {
            "TrainingJobName": name,
            "TrainingJobArn": job.arn,
            "TrainingJobStatus": status,
            "ModelArtifacts": job.model_artifacts,
            "BillableTimeInSeconds": billable,
        }
        if status == "Completed":
            self.stepfunctions.send_task_success(taskToken=token, output=json.dumps(details))
        else:
            error = "TrainingJobStopped" if status == "Stopped" else "TrainingJobFailed"
            cause = json.dumps({**details, "FailureReason": failure_reason})
            self.stepfunctions.send_task_failure(taskToken=token, error=error, cause=cause)

    def wait_ended(self, execution_arn: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.stepfunctions.describe_execution(executionArn=execution_arn)["status"]
            if status != "RUNNING":
                return str(status)
            time.sleep(0.02)
        raise AssertionError(f"{execution_arn} did not end")


def host_lines(
    start_line: str = "SM_CURRENT_INSTANCE_GROUP={group}",
) -> list[tuple[str, float, str]]:
    """Each host says its group first (as the toolkit does), then lines interleaved in time."""
    lines: list[tuple[str, float, str]] = []
    for index, (host, group) in enumerate(sorted(HOSTS.items())):
        lines.append((host, 0.1 * index, start_line.format(group=group)))
    for step in range(3):
        for index, host in enumerate(sorted(HOSTS)):
            # algo-4 logs first in each step, then algo-3, ...: streams interleave in time.
            lines.append((host, 1 + step + 0.1 * (len(HOSTS) - index), f"{host} step {step}"))
    return lines


class Scenario:
    """A run's life in steps, played by the test one step per poll (``step``) or all at once
    in a thread (``play``): job created, downloading with the hosts' first lines, training,
    then the end (``Completed``, ``Failed`` with a reason, or nothing when ``outcome`` is None).
    """

    def __init__(
        self,
        stack: FakeStack,
        execution_arn: str,
        *,
        outcome: str | None = "Completed",
        reason: str | None = None,
        lines: list[tuple[str, float, str]] | None = None,
    ) -> None:
        self.stack = stack
        self.execution_arn = execution_arn
        self.outcome = outcome
        self.reason = reason
        self.lines = host_lines() if lines is None else lines
        self.job = ""
        self.start = datetime.now(UTC)
        self._steps = [self._create, self._download, self._train, self._end]
        self.played = 0

    def _create(self) -> None:
        self.job = self.stack.create_job(self.execution_arn)

    def _download(self) -> None:
        self.stack.advance(self.job, "Downloading", "Downloading input data")
        self.stack.log(self.job, self.lines, self.start)

    def _train(self) -> None:
        self.stack.advance(self.job, "Training", "Training in progress.")

    def _end(self) -> None:
        if self.outcome is not None:
            self.stack.finish(self.execution_arn, self.job, self.outcome, self.reason)
            self.stack.wait_ended(self.execution_arn)

    def step(self, _seconds: float = 0.0) -> None:
        if self.played < len(self._steps):
            self._steps[self.played]()
            self.played += 1

    def play(self) -> None:
        while self.played < len(self._steps):
            self.step()
