"""Run a synthesized training state machine locally, with no AWS account.

moto provides Step Functions (its interpreter runs the real definition), SageMaker, DynamoDB,
IAM and Lambda; the stack's own submit and events handlers run in-process for every Lambda
invoke (moto does not run Lambda code). Where moto is thinner than the services it is filled in:
job names are unique, jobs stay InProgress until their end is simulated, StopTrainingJob exists,
and SendTaskFailure keeps its cause. The end of a job is simulated by sending the events handler
the "SageMaker Training Job State Change" event the service would send.

Command line (after ``cdk synth``)::

    python -m hetero_constructs.local cdk.out/HeteroTrainingExample.template.json \\
        --input '{"hyperparameters": {"epochs": 1}}' --outcome Completed

moto is a development dependency (``pip install 'hetero-constructs[dev]'``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import logging
import os
import re
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hetero_constructs.core import lifecycle
from hetero_constructs.handlers import lambda_source

ACCOUNT = "123456789012"
TERMINAL_EXECUTION = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
_LOCK = threading.Lock()


@dataclass
class ExecutionResult:
    """What a local run did: the execution's end, its history, and the jobs it created."""

    status: str
    output: Any
    error: str | None
    cause: str | None
    history: list[dict[str, Any]]
    training_jobs: list[dict[str, Any]]
    submitted_requests: list[dict[str, Any]] = field(default_factory=list)


class _Handlers:
    """The stack's Lambda handlers, called in-process for moto's Lambda invokes."""

    def __init__(self) -> None:
        self.by_function: dict[str, tuple[Callable[..., Any], dict[str, str]]] = {}
        self.invocations: list[tuple[str, Any]] = []
        # handler ("submit.handler") -> error types to raise after the handler has run
        self.faults: dict[str, list[str]] = {}
        self._handler_names: dict[str, str] = {}

    def register(self, function_name: str, handler: str, environment: dict[str, str]) -> None:
        source = str(lambda_source())
        if source not in sys.path:
            sys.path.insert(0, source)
        module_name, function = handler.rsplit(".", 1)
        module = importlib.import_module(module_name)
        self.by_function[function_name] = (getattr(module, function), environment)
        self._handler_names[function_name] = handler

    def invoke(self, function_name: str, body: Any, response_headers: dict[str, str]) -> bytes:
        name = (
            function_name.rsplit(":", 1)[-1] if function_name.startswith("arn:") else function_name
        )
        handler, environment = self.by_function[name]
        event = json.loads(body) if body else {}
        self.invocations.append((name, event))
        os.environ.update(environment)
        try:
            result = handler(event, None)
            fault = self.faults.get(self._handler_names[name])
            if fault:  # simulate a Lambda that did its work, then failed to return
                raise _InjectedFault(fault.pop(0))
        except Exception as error:  # reported to the state machine as a function error
            response_headers["x-amz-function-error"] = "Unhandled"
            error_type = (
                error.error_type if isinstance(error, _InjectedFault) else type(error).__name__
            )
            return json.dumps({"errorType": error_type, "errorMessage": str(error)}).encode()
        return json.dumps(result).encode()


class _InjectedFault(Exception):
    def __init__(self, error_type: str) -> None:
        super().__init__(f"injected {error_type}")
        self.error_type = error_type


class LocalCloud:
    """moto in-process, with the stack's handlers behind its Lambda functions.

    Use as a context manager; ``deploy`` a synthesized template, then ``run`` executions.
    """

    def __init__(self, region: str = "us-west-2") -> None:
        self.region = region
        self.handlers = _Handlers()
        self.job_status: dict[str, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.stopped_jobs: list[str] = []
        self.state_machines: list[str] = []  # ARNs, in template order, once deployed
        self.definitions: dict[str, Any] = {}  # the definitions as deployed, by ARN
        self._stack = contextlib.ExitStack()

    # -- moto, with the gaps filled ---------------------------------------------------------------

    def __enter__(self) -> LocalCloud:
        from moto import mock_aws

        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }.items():
            self._stack.enter_context(_environment(key, value))
        self._stack.enter_context(
            mock_aws(
                config={
                    "stepfunctions": {"execute_state_machine": True},
                    "lambda": {"use_docker": False},
                }
            )
        )
        # moto's interpreter logs every failed state at ERROR with its whole parse tree.
        interpreter_log = logging.getLogger("moto.stepfunctions")
        self._stack.callback(interpreter_log.setLevel, interpreter_log.level)
        interpreter_log.setLevel(logging.CRITICAL)
        self._patch_lambda()
        self._patch_sagemaker()
        self._patch_stepfunctions()
        self._record_requests()
        return self

    def _record_requests(self) -> None:
        """Keep every CreateTrainingJob request exactly as the handlers send it."""
        import boto3

        boto3.setup_default_session()
        assert boto3.DEFAULT_SESSION is not None

        def record(params: dict[str, Any], **_: Any) -> None:
            self.requests.append(json.loads(json.dumps(params, default=str)))

        boto3.DEFAULT_SESSION.events.register(
            "provide-client-params.sagemaker.CreateTrainingJob", record
        )
        self._stack.callback(setattr, boto3, "DEFAULT_SESSION", None)

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        original = getattr(owner, name, None)
        setattr(owner, name, replacement)
        self._stack.callback(_restore, owner, name, original)

    def _patch_lambda(self) -> None:
        from moto.awslambda_simple.models import LambdaSimpleBackend

        handlers = self.handlers

        def invoke(
            backend: Any,
            function_name: str,
            qualifier: Any,
            body: Any,
            headers: Any,
            response_headers: dict[str, str],
        ) -> bytes:
            return handlers.invoke(function_name, body, response_headers)

        self._patch(LambdaSimpleBackend, "invoke", invoke)

    def _patch_sagemaker(self) -> None:
        from moto.sagemaker.exceptions import ResourceInUseException, ValidationError
        from moto.sagemaker.models import SageMakerModelBackend
        from moto.sagemaker.responses import SageMakerResponse

        status, stopped = self.job_status, self.stopped_jobs
        create, describe = (
            SageMakerModelBackend.create_training_job,
            SageMakerModelBackend.describe_training_job,
        )

        def create_unique(backend: Any, training_job_name: str, **kwargs: Any) -> Any:
            with _LOCK:
                if training_job_name in backend.training_jobs:
                    raise ResourceInUseException(
                        message=f"Training job {training_job_name} already exists"
                    )
                status[training_job_name] = {
                    "TrainingJobStatus": "InProgress",
                    "SecondaryStatus": "Training",
                }
                return create(backend, training_job_name=training_job_name, **kwargs)

        def describe_live(backend: Any, training_job_name: str) -> dict[str, Any]:
            return {**describe(backend, training_job_name), **status.get(training_job_name, {})}

        def stop(backend: Any, training_job_name: str) -> None:
            current = status.get(training_job_name, {}).get("TrainingJobStatus")
            if current != "InProgress":
                raise ValidationError(message=f"The job {training_job_name} is not in progress")
            status[training_job_name] = {
                "TrainingJobStatus": "Stopping",
                "SecondaryStatus": "Stopping",
            }
            stopped.append(training_job_name)

        def stop_response(response: Any) -> Any:
            from moto.core.responses import ActionResult

            stop(response.sagemaker_backend, response._get_param("TrainingJobName"))
            return ActionResult({})

        self._patch(SageMakerModelBackend, "create_training_job", create_unique)
        self._patch(SageMakerModelBackend, "describe_training_job", describe_live)
        self._patch(SageMakerResponse, "stop_training_job", stop_response)

    def _patch_stepfunctions(self) -> None:
        """moto's SendTaskFailure drops the cause; the service keeps it."""
        from moto.stepfunctions.responses import StepFunctionResponse

        def send_task_failure(response: Any) -> Any:
            from moto.core.responses import EmptyResult

            response.stepfunction_backend.send_task_failure(
                response._get_param("taskToken"),
                error=response._get_param("error"),
                cause=response._get_param("cause"),
            )
            return EmptyResult()

        self._patch(StepFunctionResponse, "send_task_failure", send_task_failure)

    # -- deploying a synthesized template ----------------------------------------------------

    def deploy(self, template: dict[str, Any]) -> dict[str, str]:
        """Create the template's table, functions and state machines; their ARNs by logical id."""
        import boto3

        resources = template["Resources"]
        arns: dict[str, str] = {}
        names: dict[str, str] = {}
        iam = boto3.client("iam")
        role_arn = iam.create_role(
            RoleName="local-runner", AssumeRolePolicyDocument=json.dumps({"Statement": []})
        )["Role"]["Arn"]
        for logical_id, resource in resources.items():
            if resource["Type"] == "AWS::DynamoDB::Table":
                self._create_table(logical_id, resource["Properties"])
                names[logical_id] = logical_id
        for logical_id, resource in resources.items():
            if resource["Type"] == "AWS::Lambda::Function":
                arns[logical_id] = self._create_function(logical_id, resource, role_arn, names)
        for logical_id, resource in resources.items():
            if resource["Type"] == "AWS::StepFunctions::StateMachine":
                definition = _resolve(
                    resource["Properties"]["DefinitionString"], template, arns, self.region
                )
                created = boto3.client("stepfunctions").create_state_machine(
                    name=resource["Properties"].get("StateMachineName", logical_id),
                    definition=definition,
                    roleArn=role_arn,
                )
                arns[logical_id] = created["stateMachineArn"]
                self.state_machines.append(created["stateMachineArn"])
                self.definitions[created["stateMachineArn"]] = json.loads(definition)
        return arns

    def _create_table(self, name: str, properties: dict[str, Any]) -> None:
        import boto3

        indexes = [
            {key: index[key] for key in ("IndexName", "KeySchema", "Projection")}
            for index in properties.get("GlobalSecondaryIndexes", [])
        ]
        boto3.client("dynamodb").create_table(
            TableName=name,
            KeySchema=properties["KeySchema"],
            AttributeDefinitions=properties["AttributeDefinitions"],
            BillingMode="PAY_PER_REQUEST",
            **({"GlobalSecondaryIndexes": indexes} if indexes else {}),
        )

    def _create_function(
        self, logical_id: str, resource: dict[str, Any], role_arn: str, names: dict[str, str]
    ) -> str:
        import boto3

        properties = resource["Properties"]
        environment: dict[str, str] = {
            str(key): str(
                names.get(value["Ref"], value["Ref"]) if isinstance(value, dict) else value
            )
            for key, value in properties.get("Environment", {}).get("Variables", {}).items()
        }
        environment.pop("AWS_DATA_PATH", None)  # the package is not unpacked here
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("placeholder.py", "")
        created = boto3.client("lambda").create_function(
            FunctionName=logical_id,
            Runtime="python3.12",
            Role=role_arn,
            Handler=properties["Handler"],
            Code={"ZipFile": archive.getvalue()},
        )
        self.handlers.register(logical_id, properties["Handler"], environment)
        return str(created["FunctionArn"])

    # -- running executions ---------------------------------------------------------------------

    def run(
        self,
        state_machine_arn: str,
        execution_input: Any = None,
        *,
        name: str = "local-run",
        outcome: str = "Completed",
        failure_reason: str = "AlgorithmError: training script exited with code 1",
        job_duration: timedelta = timedelta(hours=1),
        stop_execution: bool = False,
        timeout: float = 60.0,
    ) -> ExecutionResult:
        """Start an execution, let its job end with ``outcome`` (or stop the execution)."""
        import boto3

        stepfunctions = boto3.client("stepfunctions")
        sagemaker = boto3.client("sagemaker")
        started = stepfunctions.start_execution(
            stateMachineArn=state_machine_arn, name=name, input=json.dumps(execution_input or {})
        )
        execution_arn = started["executionArn"]
        deadline = time.monotonic() + timeout
        job_name = self._wait_for_job(stepfunctions, execution_arn, deadline)
        if job_name is not None and stop_execution:
            stepfunctions.stop_execution(executionArn=execution_arn, error="Stopped", cause="local")
            events = self._events_handler()
            events(_execution_event("ABORTED", execution_arn, state_machine_arn), None)
            if self.job_status[job_name]["TrainingJobStatus"] == "Stopping":
                # The job stops, and SageMaker says so; the aborted execution waits no more.
                self.job_status[job_name] = {
                    "TrainingJobStatus": "Stopped",
                    "SecondaryStatus": "Stopped",
                    "FailureReason": "Stopped by StopTrainingJob",
                }
                job = sagemaker.describe_training_job(TrainingJobName=job_name)
                events(_job_event(job, "Stopped", "Stopped by StopTrainingJob", job_duration), None)
        elif job_name is not None:
            job = sagemaker.describe_training_job(TrainingJobName=job_name)
            event = _job_event(job, outcome, failure_reason, job_duration)
            # SageMaker's own view changes first; the event follows it.
            self.job_status[job_name] = {
                k: v
                for k, v in event["detail"].items()
                if k in ("TrainingJobStatus", "SecondaryStatus", "FailureReason", "ModelArtifacts")
            }
            self._events_handler()(event, None)
        description = self._wait_for_end(stepfunctions, execution_arn, deadline)
        history = stepfunctions.get_execution_history(executionArn=execution_arn, maxResults=1000)
        jobs = [
            sagemaker.describe_training_job(TrainingJobName=j["TrainingJobName"])
            for j in sagemaker.list_training_jobs()["TrainingJobSummaries"]
        ]
        submitted = [r for r in self.requests if r["TrainingJobName"] == job_name]
        return ExecutionResult(
            status=description["status"],
            output=json.loads(description["output"]) if description.get("output") else None,
            error=description.get("error"),
            cause=description.get("cause"),
            history=history["events"],
            training_jobs=jobs,
            submitted_requests=submitted,
        )

    def _events_handler(self) -> Callable[..., Any]:
        for handler, environment in self.handlers.by_function.values():
            if handler.__module__ == "events":
                os.environ.update(environment)
                return handler
        raise LookupError("the template has no events handler")

    def _wait_for_job(self, stepfunctions: Any, execution_arn: str, deadline: float) -> str | None:
        import boto3

        sagemaker = boto3.client("sagemaker")
        while time.monotonic() < deadline:
            for summary in sagemaker.list_training_jobs()["TrainingJobSummaries"]:
                name = str(summary["TrainingJobName"])
                running = self.job_status.get(name, {}).get("TrainingJobStatus") == "InProgress"
                if running and self._waiting(name):
                    return name
            status = stepfunctions.describe_execution(executionArn=execution_arn)["status"]
            if status in TERMINAL_EXECUTION:
                return None
            time.sleep(0.05)
        raise TimeoutError("no training job was submitted in time")

    def _waiting(self, job_name: str) -> bool:
        """The submit handler stored the task token: the execution waits for this job."""
        import boto3

        table = next(env["TOKEN_TABLE"] for _, env in self.handlers.by_function.values())
        item = (
            boto3.client("dynamodb")
            .get_item(TableName=table, Key={"pk": {"S": f"job#{job_name}"}})
            .get("Item")
        )
        return item is not None

    def _wait_for_end(
        self, stepfunctions: Any, execution_arn: str, deadline: float
    ) -> dict[str, Any]:
        while time.monotonic() < deadline:
            description = stepfunctions.describe_execution(executionArn=execution_arn)
            if description["status"] in TERMINAL_EXECUTION:
                return dict(description)
            time.sleep(0.05)
        raise TimeoutError("the execution did not end in time")


def _restore(owner: Any, name: str, original: Any) -> None:
    if original is None:
        delattr(owner, name)
    else:
        setattr(owner, name, original)


@contextlib.contextmanager
def _environment(key: str, value: str) -> Iterator[None]:
    previous = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = previous


def _job_event(
    job: dict[str, Any], outcome: str, reason: str, duration: timedelta
) -> dict[str, Any]:
    """The "SageMaker Training Job State Change" event the service sends when a job ends."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    detail = {
        "TrainingJobName": job["TrainingJobName"],
        "TrainingJobArn": job["TrainingJobArn"],
        "TrainingJobStatus": outcome,
        "SecondaryStatus": {"Completed": "Completed", "Failed": "Failed"}.get(outcome, "Stopped"),
        "ModelArtifacts": {
            "S3ModelArtifacts": f"{job['OutputDataConfig']['S3OutputPath']}"
            f"{job['TrainingJobName']}/output/model.tar.gz"
        },
        "TrainingStartTime": int(start.timestamp() * 1000),
        "TrainingEndTime": int((start + duration).timestamp() * 1000),
    }
    if outcome != "Completed":
        detail["FailureReason"] = reason
    return {
        "source": lifecycle.JOB_EVENT_SOURCE,
        "detail-type": lifecycle.JOB_EVENT_TYPE,
        "detail": detail,
    }


def _execution_event(status: str, execution_arn: str, state_machine_arn: str) -> dict[str, Any]:
    return {
        "source": lifecycle.EXECUTION_EVENT_SOURCE,
        "detail-type": lifecycle.EXECUTION_EVENT_TYPE,
        "detail": {
            "status": status,
            "executionArn": execution_arn,
            "stateMachineArn": state_machine_arn,
        },
    }


def _resolve(node: Any, template: dict[str, Any], arns: dict[str, str], region: str) -> Any:
    """Intrinsic functions as the values this local deployment gives them."""
    if isinstance(node, str | int | float | bool) or node is None:
        return node
    if isinstance(node, list):
        return [_resolve(item, template, arns, region) for item in node]
    pseudo = {
        "AWS::Partition": "aws",
        "AWS::Region": region,
        "AWS::AccountId": ACCOUNT,
        "AWS::URLSuffix": "amazonaws.com",
    }
    if "Ref" in node:
        return pseudo.get(node["Ref"], arns.get(node["Ref"], node["Ref"]))
    if "Fn::GetAtt" in node:
        logical_id, _ = node["Fn::GetAtt"]
        kind = template["Resources"][logical_id]["Type"]
        if kind == "AWS::IAM::Role":
            return f"arn:aws:iam::{ACCOUNT}:role/{logical_id}"
        return arns.get(logical_id, f"arn:aws:local:{region}:{ACCOUNT}:{logical_id}")
    if "Fn::Join" in node:
        separator, parts = node["Fn::Join"]
        return separator.join(str(_resolve(part, template, arns, region)) for part in parts)
    if "Fn::Sub" in node:
        return re.sub(
            r"\$\{([^}]+)\}", lambda m: pseudo.get(m.group(1), m.group(1)), node["Fn::Sub"]
        )
    if "Fn::FindInMap" in node:
        name, key, attribute = node["Fn::FindInMap"]
        return template["Mappings"][name][_resolve(key, template, arns, region)][attribute]
    return {key: _resolve(value, template, arns, region) for key, value in node.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hetero_constructs.local",
        description="Run one execution of a synthesized training state machine locally (moto).",
    )
    parser.add_argument(
        "template", help="a synthesized template, e.g. cdk.out/<Stack>.template.json"
    )
    parser.add_argument("--input", default="{}", help="execution input (overrides), JSON")
    parser.add_argument(
        "--outcome", default="Completed", choices=["Completed", "Failed", "Stopped"]
    )
    parser.add_argument("--region", default="us-west-2")
    args = parser.parse_args(argv)
    template = json.loads(Path(args.template).read_text())
    with LocalCloud(args.region) as cloud:
        cloud.deploy(template)
        for machine in cloud.state_machines:
            result = cloud.run(machine, json.loads(args.input), outcome=args.outcome)
            print(f"state machine: {machine}")
            for request in result.submitted_requests:
                print("submitted CreateTrainingJob request:")
                print(json.dumps(_summary(request), indent=2))
            print(f"execution status: {result.status}")
            if result.error:
                print(f"error: {result.error}\ncause: {result.cause}")
            else:
                print(f"output: {json.dumps(result.output)}")
            print(f"history events: {len(result.history)}")
    return 0


def _summary(request: dict[str, Any]) -> dict[str, Any]:
    """The parts of the request that show the heterogeneous setup."""
    if "violations" in request:
        return request
    hyperparameters = request.get("HyperParameters", {})
    return {
        "TrainingJobName": request["TrainingJobName"],
        "InstanceGroups": request["ResourceConfig"].get("InstanceGroups"),
        "Channels": [
            {
                "ChannelName": c["ChannelName"],
                "S3Uri": c["DataSource"]["S3DataSource"]["S3Uri"],
                "InstanceGroupNames": c["DataSource"]["S3DataSource"].get("InstanceGroupNames"),
            }
            for c in request.get("InputDataConfig", [])
        ],
        "DistributionHyperParameters": {
            k: v for k, v in hyperparameters.items() if k.startswith(("sagemaker_", "mp_"))
        },
        "UserHyperParameters": {
            k: v for k, v in hyperparameters.items() if not k.startswith(("sagemaker_", "mp_"))
        },
        "TrainingImage": request["AlgorithmSpecification"]["TrainingImage"],
    }
