"""Creating a synthesized template's resources in moto, in dependency order.

IAM roles, DynamoDB tables, SQS queues, SNS topics and S3 buckets first (what the others
reference), then Lambda functions (with their event-invoke configs and dead-letter queues), then
state machines, then EventBridge rules on the local bus. Each resource is created with the
physical id the resolver gives it, and the ids moto answers are recorded back. Types the runner
does not simulate (alarms, policies, log groups, VPC plumbing, ...) are skipped and named once in
the notes; their ``Ref``/``Fn::GetAtt`` still resolve to realistic ids.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetero_constructs.local.deploy.resolve import Resolver
from hetero_constructs.local.events import DEFAULT_TARGET_RETRIES, EventBus, Rule, Target
from hetero_constructs.local.lambdas import Lambdas, LocalFunction, private_module_names

#: Variables never set in-process: a Lambda's trimmed botocore models would hide operations.
PROCESS_WIDE_VARIABLES = ("AWS_DATA_PATH",)
DEPLOYED_TYPES = (
    "AWS::IAM::Role",
    "AWS::DynamoDB::Table",
    "AWS::SQS::Queue",
    "AWS::SNS::Topic",
    "AWS::S3::Bucket",
    "AWS::Lambda::Function",
    "AWS::Lambda::EventInvokeConfig",
    "AWS::StepFunctions::StateMachine",
    "AWS::Events::Rule",
    "AWS::SageMaker::ModelPackageGroup",
)


@dataclass
class StateMachine:
    """A deployed state machine: its ARN, name, logical id and definition as deployed."""

    arn: str
    name: str
    logical_id: str
    definition: dict[str, Any]


@dataclass
class DeployedStack:
    """What ``deploy`` created."""

    state_machines: list[StateMachine] = field(default_factory=list)
    functions: list[LocalFunction] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Deployer:
    """Creates one template's resources in moto (inside an active ``mock_aws``)."""

    def __init__(
        self,
        template: dict[str, Any],
        resolver: Resolver,
        template_dir: Path | None,
        lambdas: Lambdas,
        bus: EventBus,
        scratch: Path,
    ) -> None:
        self.template = template
        self.resources: dict[str, Any] = template.get("Resources", {})
        self.resolver = resolver
        self.template_dir = template_dir
        self.lambdas = lambdas
        self.bus = bus
        self.scratch = scratch
        self.stack = DeployedStack()

    def _client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=self.resolver.region)

    def of_type(self, kind: str) -> list[tuple[str, dict[str, Any]]]:
        return [(lid, r) for lid, r in self.resources.items() if r.get("Type") == kind]

    def properties(self, resource: dict[str, Any]) -> dict[str, Any]:
        resolved = self.resolver.resolve(resource.get("Properties", {}))
        return resolved if isinstance(resolved, dict) else {}

    def deploy(self) -> DeployedStack:
        for logical_id, resource in self.of_type("AWS::IAM::Role"):
            self._role(logical_id, resource)
        for logical_id, resource in self.of_type("AWS::DynamoDB::Table"):
            self._table(logical_id, resource)
        for logical_id, resource in self.of_type("AWS::SQS::Queue"):
            self._queue(logical_id, resource)
        for logical_id, resource in self.of_type("AWS::SNS::Topic"):
            self._topic(logical_id, resource)
        for logical_id, resource in self.of_type("AWS::S3::Bucket"):
            self._bucket(logical_id, resource)
        for logical_id, resource in self.of_type("AWS::SageMaker::ModelPackageGroup"):
            self._model_package_group(logical_id, resource)
        for logical_id, resource in self.of_type("AWS::Lambda::Function"):
            self._function(logical_id, resource)
        for _, resource in self.of_type("AWS::Lambda::EventInvokeConfig"):
            self._event_invoke_config(resource)
        for logical_id, resource in self.of_type("AWS::StepFunctions::StateMachine"):
            self._state_machine(logical_id, resource)
        for logical_id, resource in self.of_type("AWS::Events::Rule"):
            self._rule(logical_id, resource)
        self._note_skipped()
        return self.stack

    # -- resources -------------------------------------------------------------------------

    def _role(self, logical_id: str, resource: dict[str, Any]) -> None:
        properties = self.properties(resource)
        physical = self.resolver.physical(logical_id)
        self._ensure_role(
            physical.ref,
            properties.get("Path", "/"),
            properties.get("AssumeRolePolicyDocument")
            or {"Version": "2012-10-17", "Statement": []},
        )

    def _ensure_role(self, name: str, path: str, trust: dict[str, Any]) -> None:
        iam = self._client("iam")
        with contextlib.suppress(iam.exceptions.EntityAlreadyExistsException):
            iam.create_role(RoleName=name, Path=path, AssumeRolePolicyDocument=json.dumps(trust))

    def _role_arn(self, name: str) -> str:
        return f"arn:{self.resolver.partition}:iam::{self.resolver.account}:role/{name}"

    def _table(self, logical_id: str, resource: dict[str, Any]) -> None:
        properties = self.properties(resource)
        name = self.resolver.physical(logical_id).ref
        arguments: dict[str, Any] = {
            "TableName": name,
            "KeySchema": properties["KeySchema"],
            "AttributeDefinitions": properties["AttributeDefinitions"],
            "BillingMode": "PAY_PER_REQUEST",
        }
        for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            if properties.get(key):
                arguments[key] = [
                    {k: v for k, v in index.items() if k != "ProvisionedThroughput"}
                    for index in properties[key]
                ]
        if properties.get("StreamSpecification"):
            arguments["StreamSpecification"] = {
                "StreamEnabled": True,
                **properties["StreamSpecification"],
            }
        dynamodb = self._client("dynamodb")
        created = dynamodb.create_table(**arguments)["TableDescription"]
        self.resolver.record(logical_id, name, Arn=created["TableArn"])
        ttl = properties.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
            )

    def _queue(self, logical_id: str, resource: dict[str, Any]) -> None:
        properties = self.properties(resource)
        physical = self.resolver.physical(logical_id)
        attributes = {
            key: json.dumps(value)
            if isinstance(value, dict)
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
            for key, value in properties.items()
            if key
            in (
                "FifoQueue",
                "ContentBasedDeduplication",
                "VisibilityTimeout",
                "MessageRetentionPeriod",
                "DelaySeconds",
                "ReceiveMessageWaitTimeSeconds",
                "RedrivePolicy",
            )
        }
        url = self._put_queue(logical_id, physical.attributes["QueueName"], attributes)
        self.resolver.record(logical_id, url, QueueUrl=url)

    def _put_queue(self, logical_id: str, name: str, attributes: dict[str, str]) -> str:
        """The queue created (a redeploy updates the one there); its URL."""
        return str(
            self._client("sqs").create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        )

    def _topic(self, logical_id: str, resource: dict[str, Any]) -> None:
        physical = self.resolver.physical(logical_id)
        arn = self._client("sns").create_topic(Name=physical.attributes["TopicName"])["TopicArn"]
        self.resolver.record(logical_id, arn, TopicArn=arn)

    def _bucket(self, logical_id: str, resource: dict[str, Any]) -> None:
        name = self.resolver.physical(logical_id).ref
        arguments: dict[str, Any] = {"Bucket": name}
        if self.resolver.region != "us-east-1":
            arguments["CreateBucketConfiguration"] = {"LocationConstraint": self.resolver.region}
        self._client("s3").create_bucket(**arguments)

    def _model_package_group(self, logical_id: str, resource: dict[str, Any]) -> None:
        properties = self.properties(resource)
        name = self.resolver.physical(logical_id).attributes["ModelPackageGroupName"]
        arguments = {"ModelPackageGroupName": name}
        if properties.get("ModelPackageGroupDescription"):
            arguments["ModelPackageGroupDescription"] = properties["ModelPackageGroupDescription"]
        arn = self._client("sagemaker").create_model_package_group(**arguments)[
            "ModelPackageGroupArn"
        ]
        self.resolver.record(logical_id, arn, ModelPackageGroupArn=arn)

    def _function(self, logical_id: str, resource: dict[str, Any]) -> None:
        properties = self.properties(resource)
        physical = self.resolver.physical(logical_id)
        runtime = str(properties.get("Runtime") or properties.get("PackageType") or "unknown")
        handler = str(properties.get("Handler") or "index.handler")
        environment = {
            str(key): _text(value)
            for key, value in (properties.get("Environment") or {}).get("Variables", {}).items()
        }
        for variable in PROCESS_WIDE_VARIABLES:
            if environment.pop(variable, None) is not None:
                self.stack.notes.append(
                    f"{logical_id}: {variable} is not set in-process (it would change every "
                    "client of the runner's process)"
                )
        role_arn = str(properties.get("Role") or "")
        role_name = role_arn.rsplit("/", 1)[-1] or "local-runner-lambda"
        self._ensure_role(role_name, "/", {"Version": "2012-10-17", "Statement": []})
        arn = self._put_function(
            logical_id,
            {
                "FunctionName": physical.ref,
                "Runtime": runtime
                if runtime.startswith(("python", "nodejs", "java"))
                else "python3.12",
                "Role": self._role_arn(role_name),
                "Handler": handler,
                "Timeout": int(properties.get("Timeout", 3)),
                "MemorySize": int(properties.get("MemorySize", 128)),
            },
        )
        self.resolver.record(logical_id, physical.ref, Arn=arn)
        code_dir, not_run = self._code_folder(logical_id, resource, properties, runtime)
        function = LocalFunction(
            logical_id=logical_id,
            name=physical.ref,
            arn=arn,
            handler=handler,
            runtime=runtime,
            code_dir=code_dir,
            environment=environment,
            timeout=int(properties.get("Timeout", 3)),
            memory=int(properties.get("MemorySize", 128)),
            not_run=not_run,
            dead_letter=(properties.get("DeadLetterConfig") or {}).get("TargetArn"),
        )
        if code_dir is not None:
            private, shared = private_module_names(code_dir)
            function.private_names = private
            if shared:
                self.stack.notes.append(
                    f"{logical_id}: modules {', '.join(sorted(shared))} of its code are shared "
                    "with the runner's process (already imported), not loaded from the asset"
                )
        if not_run:
            self.stack.notes.append(f"{logical_id}: not run locally ({not_run})")
        self.lambdas.register(function)
        self.stack.functions.append(function)

    def _put_function(self, logical_id: str, configuration: dict[str, Any]) -> str:
        """The function created in moto (a redeploy updates the one there); its ARN. moto
        holds a placeholder: the code runs from its folder (``lambdas``)."""
        created = self._client("lambda").create_function(
            **configuration, Code={"ZipFile": _placeholder_zip()}
        )
        return str(created["FunctionArn"])

    def _code_folder(
        self, logical_id: str, resource: dict[str, Any], properties: dict[str, Any], runtime: str
    ) -> tuple[Path | None, str | None]:
        if not runtime.startswith("python"):
            return None, f"a {runtime} function; only Python functions run in-process"
        code = properties.get("Code") or {}
        if "ZipFile" in code:
            folder = self.scratch / logical_id
            folder.mkdir(parents=True, exist_ok=True)
            module = str(properties.get("Handler", "index.handler")).rsplit(".", 1)[0]
            (folder / f"{module.replace('.', '/')}.py").write_text(str(code["ZipFile"]))
            return folder, None
        candidates: list[Path] = []
        base = self.template_dir
        asset_path = (resource.get("Metadata") or {}).get("aws:asset:path")
        if asset_path:
            candidates.append(
                Path(asset_path)
                if Path(asset_path).is_absolute() or base is None
                else base / asset_path
            )
        key = str(code.get("S3Key", ""))
        digest = key.split(".", 1)[0].rsplit("/", 1)[-1]
        if base is not None and digest:
            for manifest in sorted(base.glob("*.assets.json")):
                try:
                    files = json.loads(manifest.read_text()).get("files", {})
                except ValueError:
                    continue
                if digest in files:
                    candidates.append(base / files[digest]["source"]["path"])
            candidates.append(base / f"asset.{digest}")
        for candidate in candidates:
            if candidate.is_dir():
                return candidate, None
            if candidate.is_file() and zipfile.is_zipfile(candidate):
                folder = self.scratch / logical_id
                with zipfile.ZipFile(candidate) as archive:
                    archive.extractall(folder)
                return folder, None
        where = ", ".join(str(c) for c in candidates) or "no asset path in the template"
        return None, f"its code folder was not found ({where}); pass the template's path"

    def _event_invoke_config(self, resource: dict[str, Any]) -> None:
        properties = self.properties(resource)
        try:
            function = self.lambdas.find(str(properties.get("FunctionName")))
        except KeyError:
            return
        if "MaximumRetryAttempts" in properties:
            function.max_async_retries = int(properties["MaximumRetryAttempts"])
        destinations = properties.get("DestinationConfig") or {}
        function.on_failure = (destinations.get("OnFailure") or {}).get("Destination")
        function.on_success = (destinations.get("OnSuccess") or {}).get("Destination")

    def _state_machine(self, logical_id: str, resource: dict[str, Any]) -> None:
        properties = self.properties(resource)
        physical = self.resolver.physical(logical_id)
        definition = state_machine_definition(properties)
        if definition is None:
            self.stack.notes.append(
                f"{logical_id}: its definition is not in the template (DefinitionS3Location); "
                "not deployed"
            )
            return
        role = str(properties.get("RoleArn") or "")
        role_name = role.rsplit("/", 1)[-1] or "local-runner-states"
        self._ensure_role(role_name, "/", {"Version": "2012-10-17", "Statement": []})
        arguments: dict[str, Any] = {
            "name": physical.attributes["Name"],
            "definition": definition,
            "roleArn": self._role_arn(role_name),
        }
        if properties.get("StateMachineType"):
            arguments["type"] = properties["StateMachineType"]
        arn = self._put_state_machine(logical_id, arguments)
        self.resolver.record(logical_id, arn, Arn=arn)
        self.stack.state_machines.append(
            StateMachine(arn, physical.attributes["Name"], logical_id, json.loads(definition))
        )

    def _put_state_machine(self, logical_id: str, arguments: dict[str, Any]) -> str:
        """The state machine created (a redeploy updates the one there); its ARN."""
        created = self._client("stepfunctions").create_state_machine(**arguments)
        return str(created["stateMachineArn"])

    def _rule(self, logical_id: str, resource: dict[str, Any]) -> None:
        properties = self.properties(resource)
        physical = self.resolver.physical(logical_id)
        bus_name = str(properties.get("EventBusName", "default"))
        if bus_name not in ("default", "") and not bus_name.endswith("event-bus/default"):
            self.stack.notes.append(f"{logical_id}: rule on event bus {bus_name!r} not simulated")
            return
        targets = [
            Target(
                id=str(target.get("Id")),
                arn=str(target.get("Arn")),
                input=target.get("Input"),
                input_path=target.get("InputPath"),
                input_transformer=target.get("InputTransformer"),
                retry_attempts=int(
                    (target.get("RetryPolicy") or {}).get(
                        "MaximumRetryAttempts", DEFAULT_TARGET_RETRIES
                    )
                ),
                dead_letter_arn=(target.get("DeadLetterConfig") or {}).get("Arn"),
            )
            for target in properties.get("Targets", [])
        ]
        pattern = properties.get("EventPattern")
        rule = Rule(
            name=physical.ref,
            logical_id=logical_id,
            arn=physical.attributes["Arn"],
            pattern=json.loads(pattern) if isinstance(pattern, str) else pattern,
            schedule=properties.get("ScheduleExpression"),
            enabled=str(properties.get("State", "ENABLED")) == "ENABLED",
            targets=targets,
        )
        # A new list, not one changed in place: the served account's clock reads it meanwhile.
        rules = [rule if r.name == rule.name else r for r in self.bus.rules]
        self.bus.rules = rules if rule in rules else [*rules, rule]
        self.stack.rules.append(rule)

    def _note_skipped(self) -> None:
        skipped = Counter(
            str(resource.get("Type"))
            for resource in self.resources.values()
            if resource.get("Type") not in DEPLOYED_TYPES
        )
        custom = sorted(
            logical_id
            for logical_id, resource in self.resources.items()
            if str(resource.get("Type", "")).startswith("Custom::")
            or resource.get("Type") == "AWS::CloudFormation::CustomResource"
        )
        if custom:
            self.stack.notes.append(
                "custom resources not run (their providers are not invoked): " + ", ".join(custom)
            )
        if skipped:
            listed = ", ".join(f"{kind} x{count}" for kind, count in sorted(skipped.items()))
            self.stack.notes.append(f"not simulated (ids resolve, nothing is created): {listed}")


def state_machine_definition(properties: dict[str, Any]) -> str | None:
    """A state machine's definition as deployed, from its resolved properties (None: it is in
    S3, ``DefinitionS3Location``)."""
    definition = properties.get("DefinitionString")
    if definition is None and "Definition" in properties:
        definition = json.dumps(properties["Definition"])
    if definition is None:
        return None
    for key, value in (properties.get("DefinitionSubstitutions") or {}).items():
        definition = str(definition).replace("${" + key + "}", _text(value))
    return str(definition)


def definition_problems(template: dict[str, Any], resolver: Resolver) -> list[str]:
    """Why each state machine of ``template`` would not deploy: its definition is not one
    Step Functions' parser takes (moto's, as CreateStateMachine and UpdateStateMachine parse
    it), checked before anything is created or changed."""
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    problems = []
    for logical_id, resource in (template.get("Resources") or {}).items():
        if resource.get("Type") != "AWS::StepFunctions::StateMachine":
            continue
        properties = resolver.resolve(resource.get("Properties", {}))
        definition = state_machine_definition(properties if isinstance(properties, dict) else {})
        if definition is None:
            continue
        try:
            AmazonStateLanguageParser.parse(definition)
        except Exception as error:  # the parser's own errors, or its ANTLR's
            reason = " ".join(str(error).split())
            cut = f"{reason[:300]}..." if len(reason) > 300 else reason
            problems.append(f"state machine {logical_id}: its definition is refused ({cut})")
    return problems


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _placeholder_zip() -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("placeholder.txt", "the local runner runs the code from its asset folder")
    return archive.getvalue()


def scratch_folder() -> tempfile.TemporaryDirectory[str]:
    """Where inline code and zipped assets are unpacked for one local cloud."""
    return tempfile.TemporaryDirectory(prefix="hetero-local-")


__all__ = [
    "DEPLOYED_TYPES",
    "PROCESS_WIDE_VARIABLES",
    "DeployedStack",
    "Deployer",
    "StateMachine",
    "definition_problems",
    "scratch_folder",
    "state_machine_definition",
]
