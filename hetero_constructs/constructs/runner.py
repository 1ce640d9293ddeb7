"""What every training task of a stack shares: the Lambdas, the run table, the event rules.

One ``TrainingRunner`` per stack serves every state machine that contains a training task (the
library's own ``HeterogeneousTrainingJob`` state machines and the user's). Its policies do not
grow with the number of jobs: each task has a small control role holding what its jobs need,
which the shared Lambdas assume (see ``HeterogeneousTrainingTask``). The event rules match on
the tag every job of this runner carries, not on a list of jobs, so their patterns stay small.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import Duration, IStableAnyProducer, Lazy, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IConstruct

from hetero_constructs.constructs import nag, permissions
from hetero_constructs.constructs.hygiene import depend_on_policy_only
from hetero_constructs.constructs.lambda_bundle import lambda_package
from hetero_constructs.deployability.plugin import enable_deployability_checks
from hetero_constructs.run import lifecycle

if TYPE_CHECKING:
    from hetero_constructs.constructs.task import HeterogeneousTrainingTask


def newest_python_runtime() -> lambda_.Runtime:
    """The newest Python runtime this aws-cdk-lib knows (cdk-nag's L1 asks for the newest)."""
    versions = [
        tuple(int(part) for part in name.removeprefix("PYTHON_").split("_"))
        for name in dir(lambda_.Runtime)
        if name.startswith("PYTHON_3_")
    ]
    major, minor = max(versions)
    return getattr(lambda_.Runtime, f"PYTHON_{major}_{minor}")  # type: ignore[no-any-return]


RUNTIME = newest_python_runtime()
_ID = "HeteroTrainingRunner"
_DATA_PATH = "botocore_data"
# Finding the stack's runner costs calls into jsii; tasks under one scope share the answer.
_RUNNERS: dict[int, tuple[Construct, TrainingRunner]] = {}
# Construct paths, read once per scope (a read is two calls into jsii). The scope is kept with
# its path, so its id stays its own.
_PATHS: dict[int, tuple[IConstruct, str]] = {}


def node_path(scope: IConstruct) -> str:
    """``scope.node.path``, read from jsii once per scope."""
    cached = _PATHS.get(id(scope))
    if cached is not None and cached[0] is scope:
        return cached[1]
    path = scope.node.path
    _PATHS[id(scope)] = (scope, path)
    return path


def child_path(scope: IConstruct, construct_id: str) -> str:
    """The path a child ``construct_id`` of ``scope`` gets (constructs turns '/' into '--')."""
    parent = node_path(scope)
    child = construct_id.replace("/", "--")
    return f"{parent}/{child}" if parent else child


def remember_path(construct: IConstruct, path: str) -> None:
    """Record a path computed with ``child_path``, so its children need no call to find theirs."""
    _PATHS[id(construct)] = (construct, path)


@jsii.implements(IStableAnyProducer)
class _Produce:
    def __init__(self, produce: Callable[[], Any]) -> None:
        self._produce = produce

    def produce(self) -> Any:
        return self._produce()


def at_synth(produce: Callable[[], Any]) -> Any:
    """A value computed when the template is rendered, after every task has registered."""
    return Lazy.any(_Produce(produce))


class ContainingStateMachine:
    """A state machine that contains a training task: its ARN, its executions, its path."""

    def __init__(self, arn: str, executions: str, path: str) -> None:
        self.arn = arn
        self.executions = executions
        self.path = path


# What Step Functions needs of the role of the library's own state machines: invoking the
# submit function, log delivery and X-Ray (neither of the last two has resource-level permissions).
_LOG_DELIVERY_ACTIONS = [
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
]
_XRAY_ACTIONS = [
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
]


class CodeLocation:
    """A code asset and its S3 URL, bucket and key (tokens), read once per asset."""

    def __init__(self, asset: s3_assets.Asset, url: str, bucket: str, key: str) -> None:
        self.asset = asset
        self.url = url
        self.bucket = bucket
        self.key = key


class TrainingRunner(Construct):
    """One per stack: the submit and lifecycle Lambdas, the run table, rules, queue and alarms.

    Create it yourself before the jobs to choose its options; otherwise the first training task
    of the stack creates it with the defaults.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str = _ID,
        *,
        reconcile_interval: Duration | None = None,
        alarm_topic: sns.ITopic | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_YEAR,
        log_encryption_key: kms.IKey | None = None,
    ) -> None:
        """
        :param reconcile_interval: how often the reconciler converges lost events; default
            5 minutes (a lost event costs at most this much, never hours of instances).
        :param alarm_topic: SNS topic for the runner's alarms (dead letters, Lambda errors).
        :param log_retention: retention of the shared state-machine and Lambda log groups.
        :param log_encryption_key: KMS key for those log groups (the key must allow the logs
            service; the runner adds that statement to keys it can change).
        """
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.stack = stack
        self.root = self.node.root
        # What synthesizes must also deploy: the AWS quotas are checked at every synth.
        enable_deployability_checks(self)
        self.arns = permissions.Arns.of(stack)
        self.nag_ids = nag.NagIds(stack, [self.arns.partition, self.arns.region, self.arns.account])
        self.alarm_topic = alarm_topic
        self.log_retention = log_retention
        self.log_encryption_key = log_encryption_key
        if log_encryption_key is not None:
            permissions.allow_log_encryption(log_encryption_key, self.arns)
        self.runner_id = self._runner_id()
        self.control_role_path = f"/hetero-constructs/{self.runner_id}/"
        self._tasks: list[HeterogeneousTrainingTask] = []
        self._code_assets: dict[str, s3_assets.Asset] = {}
        self._containing: dict[str, list[ContainingStateMachine]] | None = None
        # The library's own state machines, registered by their constructs: only the user's
        # state machines need to be found by walking the stack.
        self._own_machines: dict[str, list[ContainingStateMachine]] = {}
        self._own_resources: set[int] = set()
        self._code_locations: dict[str, CodeLocation] = {}
        self._state_machine_role: iam.Role | None = None
        self._every_training_job_policy: iam.ManagedPolicy | None = None
        self._state_machine_role_arn: str | None = None
        self._state_machine_logs: logs.LogGroup | None = None
        self._state_machine_logs_arn: str | None = None

        self.table = self._table()
        self.dead_letters = self._dead_letter_queue()
        self._dead_letters_arn = self.dead_letters.queue_arn
        # A __pycache__ would change the asset hash from one synth to the next.
        code = lambda_.Code.from_asset(
            str(lambda_package()), exclude=["**/__pycache__", "**/*.pyc"]
        )
        # Step Functions invokes the submit function synchronously, so its queue stays empty;
        # scanners ask every function for one (checkov CKV_AWS_116).
        self.submit_function = self._function(
            "Submit", "submit.handler", code, dead_letter_queue=self.dead_letters
        )
        self.events_function = self._function(
            "Events", "events.handler", code, dead_letter_queue=self.dead_letters
        )
        # Read once: every task's definition and control role name them.
        self.submit_function_arn = self.submit_function.function_arn
        self._events_function_arn = self.events_function.function_arn
        self._roles = {
            function: role
            for function in (self.submit_function, self.events_function)
            if (role := function.role) is not None
        }
        self.lambda_role_arns = [role.role_arn for role in self._roles.values()]
        self._grant_shared()
        self._acknowledge_serverless()
        self._rules(reconcile_interval or Duration.minutes(5))
        self.alarms = self._alarms()
        # Tasks invoke the unqualified function: no version or alias wildcard is needed.
        self.invoke_statements = [
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[self.submit_function_arn]
            )
        ]

    def _runner_id(self) -> str:
        """A short id of this runner: job tags and control-role paths name it."""
        name = self.stack.stack_name
        readable = "".join(c if c.isalnum() or c == "-" else "-" for c in name)[:24].strip("-")
        digest = hashlib.sha256(self.node.path.encode()).hexdigest()[:8]
        return f"{readable or 'stack'}-{digest}"

    # -- shared resources -----------------------------------------------------------------------

    def _table(self) -> dynamodb.Table:
        table = dynamodb.Table(
            self,
            "Runs",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute="expires_at",
            removal_policy=RemovalPolicy.DESTROY,
        )
        table.add_global_secondary_index(
            index_name="byExecution",
            partition_key=dynamodb.Attribute(
                name="execution_arn", type=dynamodb.AttributeType.STRING
            ),
            projection_type=dynamodb.ProjectionType.ALL,
        )
        return table

    def _dead_letter_queue(self) -> sqs.Queue:
        """Events that could not be processed wait here (14 days) to be replayed."""
        return sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=RemovalPolicy.DESTROY,
        )

    def _function(
        self,
        name: str,
        handler: str,
        code: lambda_.Code,
        *,
        dead_letter_queue: sqs.IQueue | None = None,
    ) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{name}Logs",
            retention=self.log_retention,
            encryption_key=self.log_encryption_key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"hetero-constructs {name.lower()} Lambda",
        )
        log_group.grant_write(role)
        environment = {
            "TOKEN_TABLE": self.table.table_name,
            "AWS_DATA_PATH": f"/var/task/{_DATA_PATH}",
        }
        if dead_letter_queue is not None:
            environment["DEAD_LETTER_QUEUE"] = dead_letter_queue.queue_url
        function = lambda_.Function(
            self,
            f"{name}Function",
            runtime=RUNTIME,
            handler=handler,
            code=code,
            role=role,
            log_group=log_group,
            timeout=Duration.seconds(lifecycle.SUBMIT_TIMEOUT_SECONDS if name == "Submit" else 300),
            memory_size=256,
            tracing=lambda_.Tracing.ACTIVE,
            environment=environment,
            dead_letter_queue=dead_letter_queue,
            retry_attempts=2 if name == "Events" else None,
        )
        return function

    def _grant_shared(self) -> None:
        """What the shared Lambdas need whatever the number of jobs: their items, the roles."""
        table, index = self.table.table_arn, f"{self.table.table_arn}/index/*"
        item_actions = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"]
        assume = permissions.allow(["sts:AssumeRole"], [self.control_roles_arn])
        submit = [permissions.allow(item_actions, [table]), assume]
        lifecycle_statements = [
            permissions.allow([*item_actions, "dynamodb:Scan"], [table]),
            permissions.allow(["dynamodb:Query"], [index]),
            assume,
            permissions.allow(
                ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"],
                [self._dead_letters_arn],
            ),
        ]
        for function, statements in (
            (self.submit_function, submit),
            (self.events_function, lifecycle_statements),
        ):
            role = self._roles[function]
            # The function's own grants (logs, X-Ray, its queue) made the role's default policy;
            # these statements join it in one call, in the order add_to_principal_policy adds.
            policy = role.node.try_find_child("DefaultPolicy")
            assert isinstance(policy, iam.Policy)
            policy.add_statements(*(iam.PolicyStatement.from_json(s) for s in statements))
            depend_on_policy_only(function, role, policy)
            nag.Acknowledgments(role, self.nag_ids).wildcards(
                "The shared Lambdas assume the control roles of this runner's training tasks "
                f"(path {self.control_role_path}), each of which holds one task's permissions.",
                resources=[self.control_roles_arn],
            ).wildcards(
                "The run table's index is queried for an execution's jobs.",
                resources=[index] if function is self.events_function else [],
            ).wildcards(
                "Lambda X-Ray tracing (PutTraceSegments, PutTelemetryRecords) supports only '*'.",
                resources=["*"],
            ).record()

    def _acknowledge_serverless(self) -> None:
        """cdk-nag's Serverless pack, on what is right by design here."""
        nag.Acknowledgments(self.dead_letters, self.nag_ids).finding(
            "Serverless::Serverless-SQSRedrivePolicy",
            "This queue is itself the dead-letter queue of the runner's rules and Lambda.",
        ).record()
        nag.Acknowledgments(self.events_function, self.nag_ids).finding(
            "Serverless::Serverless-LambdaAsyncFailureDestination",
            "Failed asynchronous invokes go to the function's dead-letter queue (the same queue as "
            "the rules'), from which they are replayed; a destination would duplicate them.",
        ).record()

    @property
    def control_roles_arn(self) -> str:
        return f"arn:{self.arns.partition}:iam::{self.arns.account}:role{self.control_role_path}*"

    def _rules(self, reconcile_interval: Duration) -> None:
        """Job ends (tagged with this runner), execution ends, and the reconcile schedule."""
        # Targets as jsii maps (its property names): struct objects cost type checks and
        # conversions for the same template.
        delivery: dict[str, Any] = {
            "deadLetterConfig": {"arn": self._dead_letters_arn},
            "retryPolicy": {"maximumEventAgeInSeconds": 24 * 3600, "maximumRetryAttempts": 8},
        }
        target = {"arn": self._events_function_arn, "id": "Lifecycle", **delivery}
        patterns = {
            "JobStateChange": (
                "Settles the waiting task of a training run when its job ends",
                {
                    "source": [lifecycle.JOB_EVENT_SOURCE],
                    "detail-type": [lifecycle.JOB_EVENT_TYPE],
                    "detail": {
                        "TrainingJobStatus": list(lifecycle.TERMINAL_JOB_STATUSES),
                        "Tags": {lifecycle.TAG_RUNNER: [self.runner_id]},
                    },
                },
            ),
            "ExecutionEnd": (
                "Stops the training jobs of an aborted, timed-out or failed execution",
                {
                    "source": [lifecycle.EXECUTION_EVENT_SOURCE],
                    "detail-type": [lifecycle.EXECUTION_EVENT_TYPE],
                    "detail": {"status": list(lifecycle.STOPPING_EXECUTION_STATUSES)},
                },
            ),
        }
        # Each rule by its construct id, its ARN read once.
        rules: dict[str, str] = {}
        for construct_id, (description, pattern) in patterns.items():
            rules[construct_id] = events.CfnRule(
                self,
                construct_id,
                description=description,
                event_pattern=pattern,
                targets=[target],
            ).attr_arn
        schedule_target = {
            "arn": self._events_function_arn,
            "id": "Reconcile",
            "input": json.dumps({"action": "reconcile"}),
            **delivery,
        }
        rules["Reconcile"] = events.CfnRule(
            self,
            "Reconcile",
            description="Converges training runs whatever events were lost",
            schedule_expression=f"rate({int(reconcile_interval.to_minutes())} minutes)",
            targets=[schedule_target],
        ).attr_arn
        for construct_id, rule_arn in rules.items():
            lambda_.CfnPermission(
                self,
                f"{construct_id}Invoke",
                action="lambda:InvokeFunction",
                function_name=self._events_function_arn,
                principal="events.amazonaws.com",
                source_arn=rule_arn,
            )
        self.dead_letters.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["sqs:SendMessage"],
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                resources=[self._dead_letters_arn],
                conditions={"ArnEquals": {"aws:SourceArn": list(rules.values())}},
            )
        )

    def _alarms(self) -> list[cloudwatch.CfnAlarm]:
        """Dead-lettered events, and errors of either Lambda (missing data is OK)."""
        actions = [self.alarm_topic.topic_arn] if self.alarm_topic is not None else None

        def alarm(construct_id: str, description: str, **metric: Any) -> cloudwatch.CfnAlarm:
            return cloudwatch.CfnAlarm(
                self,
                construct_id,
                statistic="Maximum" if metric["metric_name"].startswith("Approx") else "Sum",
                period=300,
                evaluation_periods=1,
                threshold=1,
                comparison_operator="GreaterThanOrEqualToThreshold",
                treat_missing_data="notBreaching",
                alarm_description=description,
                alarm_actions=actions,
                **metric,
            )

        return [
            alarm(
                "DeadLettersAlarm",
                "Training-run events failed and wait in the dead-letter queue; replay them "
                "once the cause is fixed (README: Reliability)",
                namespace="AWS/SQS",
                metric_name="ApproximateNumberOfMessagesVisible",
                dimensions=[{"name": "QueueName", "value": self.dead_letters.queue_name}],
            ),
            *(
                alarm(
                    f"{construct_id}ErrorsAlarm",
                    f"The training runner's {construct_id} Lambda failed",
                    namespace="AWS/Lambda",
                    metric_name="Errors",
                    dimensions=[{"name": "FunctionName", "value": function.function_name}],
                )
                for construct_id, function in (
                    ("SubmitFunction", self.submit_function),
                    ("EventsFunction", self.events_function),
                )
            ),
        ]

    # -- shared by the library's own state machines -------------------------------------------

    @property
    def state_machine_role(self) -> iam.Role:
        """One role for every ``HeterogeneousTrainingJob`` state machine of the stack.

        Its policy is inline: it is the same for every job, and a state machine that names the
        role (``Fn::GetAtt``) is created after it, policy included, without a ``DependsOn``.
        """
        if self._state_machine_role is None:
            document = permissions.document(
                [
                    permissions.allow(["lambda:InvokeFunction"], [self.submit_function_arn]),
                    permissions.allow(_LOG_DELIVERY_ACTIONS, ["*"]),
                    permissions.allow(_XRAY_ACTIONS, ["*"]),
                ]
            )
            role = iam.Role(
                self,
                "StateMachineRole",
                assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
                description="hetero-constructs training state machines",
                inline_policies={"StateMachines": iam.PolicyDocument.from_json(document)},
            )
            nag.Acknowledgments(role, self.nag_ids).wildcards(
                "Step Functions X-Ray tracing and log delivery to CloudWatch Logs support "
                "only '*'.",
                resources=["*"],
            ).record()
            self._state_machine_role = role
            self._state_machine_role_arn = role.role_arn
        return self._state_machine_role

    @property
    def every_training_job_policy(self) -> iam.ManagedPolicy:
        """What every training job's execution role needs, once for the stack's roles.

        ``permissions.every_training_job``: the same statements for every job, so one managed
        policy instead of a copy in each role's inline policy.
        """
        if self._every_training_job_policy is None:
            document = permissions.document(permissions.every_training_job(self.arns))
            policy = iam.ManagedPolicy(
                self,
                "TrainingJobsPolicy",
                description="What every hetero-constructs training job of the stack needs",
                document=iam.PolicyDocument.from_json(document),
            )
            nag.Acknowledgments(policy, self.nag_ids).wildcards(
                "Only for actions without resource-level permissions: ecr:GetAuthorizationToken "
                "and cloudwatch:PutMetricData (restricted to SageMaker's namespace by condition).",
                resources=["*"],
            ).record()
            self._every_training_job_policy = policy
        return self._every_training_job_policy

    @property
    def state_machine_role_arn(self) -> str:
        """The ARN of ``state_machine_role``, read once."""
        if self._state_machine_role_arn is None:
            self._state_machine_role_arn = self.state_machine_role.role_arn
        return self._state_machine_role_arn

    @property
    def state_machine_logs(self) -> logs.LogGroup:
        """One log group for the stack's training state machines (unless a job has its own)."""
        if self._state_machine_logs is None:
            self._state_machine_logs = logs.LogGroup(
                self,
                "StateMachineLogs",
                log_group_name=f"/aws/vendedlogs/states/{self.runner_id}",
                retention=self.log_retention,
                encryption_key=self.log_encryption_key,
                removal_policy=RemovalPolicy.DESTROY,
            )
        return self._state_machine_logs

    @property
    def state_machine_logs_arn(self) -> str:
        """The ARN of ``state_machine_logs``, read once."""
        if self._state_machine_logs_arn is None:
            self._state_machine_logs_arn = self.state_machine_logs.log_group_arn
        return self._state_machine_logs_arn

    # -- tasks ----------------------------------------------------------------------------------

    @staticmethod
    def of(scope: Construct) -> TrainingRunner:
        """The stack's runner, created on first use."""
        cached = _RUNNERS.get(id(scope))
        if cached is not None and cached[0] is scope:
            return cached[1]
        stack = Stack.of(scope)
        existing = stack.node.try_find_child(_ID)
        runner = existing if isinstance(existing, TrainingRunner) else TrainingRunner(stack, _ID)
        _RUNNERS[id(scope)] = (scope, runner)  # the scope is kept, so its id stays its own
        return runner

    def serve(self, scope: Construct) -> None:
        """Let ``TrainingRunner.of(scope)`` answer without asking jsii (scope is in this stack)."""
        _RUNNERS[id(scope)] = (scope, self)

    def code_asset(self, bundle: Path) -> s3_assets.Asset:
        """The asset of a code bundle; tasks that ship the same bytes share one asset."""
        return self.code_location(bundle).asset

    def code_location(self, bundle: Path) -> CodeLocation:
        """The asset of a code bundle and where it is uploaded, shared by the tasks that ship it."""
        asset_id = f"Code{bundle.parent.name[:12]}"
        location = self._code_locations.get(asset_id)
        if location is None:
            asset = s3_assets.Asset(self, asset_id, path=str(bundle))
            self._code_assets[asset_id] = asset
            location = self._code_locations[asset_id] = CodeLocation(
                asset, asset.s3_object_url, asset.s3_bucket_name, asset.s3_object_key
            )
        return location

    def register(
        self,
        task: HeterogeneousTrainingTask,
        own_state_machine: ContainingStateMachine | None = None,
    ) -> None:
        """Serve a task; job-name prefixes must not shadow each other within the app.

        ``own_state_machine``: the one state machine that contains the task, when a construct
        of this library renders it (then no walk of the stack has to find it).
        """
        prefix = task.job_name_prefix
        for other in _app_tasks(self):
            known = other.job_name_prefix
            if f"{prefix}-".startswith(f"{known}-") or f"{known}-".startswith(f"{prefix}-"):
                raise ValueError(
                    f"{task.node.path}: job name prefix '{prefix}' overlaps '{known}' of "
                    f"{other.node.path}; job names, IAM scoping and event routing would mix the "
                    "two. Allowed: prefixes where neither is the other plus '-...' within one "
                    "app. Fix: give one of them another job_name_prefix."
                )
        self._tasks.append(task)
        if own_state_machine is not None:
            self._own_machines[task.marker] = [own_state_machine]
        self._containing = None

    def own_state_machine_resource(self, resource: sfn.CfnStateMachine) -> None:
        """A state machine of this library: its tasks are registered with it, never searched."""
        self._own_resources.add(id(resource))

    @property
    def tasks(self) -> tuple[HeterogeneousTrainingTask, ...]:
        return tuple(self._tasks)

    def containing_state_machines(
        self, task: HeterogeneousTrainingTask
    ) -> list[ContainingStateMachine]:
        """The state machines of the stack whose definition contains ``task`` (found at synth)."""
        own = self._own_machines.get(task.marker)
        if own is not None:
            return own
        if self._containing is None:
            self._containing = self._discover()
        return self._containing.get(task.marker, [])

    def _discover(self) -> dict[str, list[ContainingStateMachine]]:
        """Walk the stack for the user's state machines that contain the user's tasks."""
        found: dict[str, list[ContainingStateMachine]] = {}
        markers = [task.marker for task in self._tasks if task.marker not in self._own_machines]
        if not markers:
            return found
        for construct in self.stack.node.find_all():
            if (
                not isinstance(construct, sfn.CfnStateMachine)
                or id(construct) in self._own_resources
            ):
                continue
            text = "".join(_strings(self.stack.resolve(construct.definition_string)))
            contained = [marker for marker in markers if marker in text]
            if not contained:
                continue
            machine = self._machine(construct)
            for marker in contained:
                found.setdefault(marker, []).append(machine)
        return found

    def _machine(self, cfn: sfn.CfnStateMachine) -> ContainingStateMachine:
        name = cfn.state_machine_name
        if name is None or _is_token(name):
            name, arn = cfn.attr_name, cfn.attr_arn
        else:
            # A literal name gives the ARN without a reference (no dependency on the resource).
            arn = self.arns.state_machine(name)
        executions = self.arns.arn("states", f"execution:{name}:*")
        return ContainingStateMachine(arn, executions, cfn.node.path)


def _is_token(value: str) -> bool:
    return "${Token[" in value


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
    elif isinstance(node, dict):
        for item in node.values():
            yield from _strings(item)


def _app_tasks(runner: TrainingRunner) -> Iterator[HeterogeneousTrainingTask]:
    """Every task registered with any runner of the same app (prefixes are app-wide)."""
    root = runner.root
    seen: set[int] = set()
    for _, other in list(_RUNNERS.values()):
        if id(other) in seen or other.root is not root:
            continue
        seen.add(id(other))
        yield from other.tasks
    if id(runner) not in seen:
        yield from runner.tasks


__all__ = [
    "RUNTIME",
    "CodeLocation",
    "ContainingStateMachine",
    "TrainingRunner",
    "at_synth",
    "child_path",
    "lambda_package",
    "node_path",
    "remember_path",
]
