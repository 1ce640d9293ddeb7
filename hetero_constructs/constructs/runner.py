"""What every training task of a stack shares: the Lambdas, the run table, the event rules.

One ``TrainingRunner`` per stack serves every state machine that contains a training task (the
library's own ``HeterogeneousTrainingJob`` state machines and the user's). Its policies do not
grow with the number of jobs: each task has a small control role holding what its jobs need,
which the shared Lambdas assume (see ``HeterogeneousTrainingTask``). The event rules match on
the tag every job of this runner carries, not on a list of jobs, so their patterns stay small.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, Node

from hetero_constructs.constructs import nag, permissions
from hetero_constructs.constructs import runner_resources as resources
from hetero_constructs.constructs.hygiene import depend_on_policy_only
from hetero_constructs.constructs.lambda_bundle import lambda_package
from hetero_constructs.deployability.plugin import enable_deployability_checks

_ID = "HeteroTrainingRunner"


class ServedTask(Protocol):
    """What the runner reads of a training task it serves (``HeterogeneousTrainingTask``)."""

    job_name_prefix: str
    #: Text that the definition of every state machine containing the task holds.
    marker: str

    @property
    def node(self) -> Node: ...


class ContainingStateMachine:
    """A state machine that contains a training task: its ARN, its executions, its path."""

    def __init__(self, arn: str, executions: str, path: str) -> None:
        self.arn = arn
        self.executions = executions
        self.path = path


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
        self._tasks: list[ServedTask] = []
        # The other runners of the app (job-name prefixes are app-wide), from the construct
        # tree: those made before this one, which learn of it in turn.
        self._peers = [
            other
            for other in self.root.node.find_all()
            if isinstance(other, TrainingRunner) and other is not self
        ]
        for other in self._peers:
            other._peers.append(self)
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

        self.table = resources.run_table(self)
        self.dead_letters = resources.dead_letter_queue(self)
        self._dead_letters_arn = self.dead_letters.queue_arn
        # A __pycache__ would change the asset hash from one synth to the next.
        code = lambda_.Code.from_asset(
            str(lambda_package()), exclude=["**/__pycache__", "**/*.pyc"]
        )
        # Step Functions invokes the submit function synchronously, so its queue stays empty;
        # scanners ask every function for one (checkov CKV_AWS_116).
        self.submit_function, self.events_function = (
            resources.runner_function(
                self,
                name,
                handler,
                code,
                table=self.table,
                log_retention=log_retention,
                log_encryption_key=log_encryption_key,
                dead_letter_queue=self.dead_letters,
            )
            for name, handler in (("Submit", "submit.handler"), ("Events", "events.handler"))
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
        resources.event_rules(
            self,
            runner_id=self.runner_id,
            events_function_arn=self._events_function_arn,
            dead_letters=self.dead_letters,
            dead_letters_arn=self._dead_letters_arn,
            reconcile_interval=reconcile_interval or Duration.minutes(5),
        )
        self.alarms = resources.alarms(
            self,
            alarm_topic=alarm_topic,
            dead_letters=self.dead_letters,
            submit_function=self.submit_function,
            events_function=self.events_function,
        )
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

    # -- shared by the library's own state machines -------------------------------------------

    @property
    def state_machine_role(self) -> iam.Role:
        """One role for every ``HeterogeneousTrainingJob`` state machine of the stack."""
        if self._state_machine_role is None:
            role = resources.state_machine_role(self, self.submit_function_arn, self.nag_ids)
            self._state_machine_role = role
            self._state_machine_role_arn = role.role_arn
        return self._state_machine_role

    @property
    def every_training_job_policy(self) -> iam.ManagedPolicy:
        """What every training job's execution role needs, once for the stack's roles."""
        if self._every_training_job_policy is None:
            self._every_training_job_policy = resources.training_jobs_policy(
                self, self.arns, self.nag_ids
            )
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
            self._state_machine_logs = resources.state_machine_logs(
                self, self.runner_id, self.log_retention, self.log_encryption_key
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
        """The runner of ``scope``'s stack, found in the construct tree; created on first use."""
        return TrainingRunner._found_from(scope, None)

    @staticmethod
    def _found_from(scope: Construct, scope_node: Node | None) -> TrainingRunner:
        """``of(scope)``, given ``scope.node`` when the caller has read it already (each read
        is a call into jsii; when the scope is the stack, its node is the stack's)."""
        if isinstance(scope, Stack):
            stack, node = scope, scope_node or scope.node
        else:
            stack = Stack.of(scope)
            node = stack.node
        existing = node.try_find_child(_ID)
        return existing if isinstance(existing, TrainingRunner) else TrainingRunner(stack, _ID)

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
        task: ServedTask,
        own_state_machine: ContainingStateMachine | None = None,
    ) -> None:
        """Serve a task; job-name prefixes must not shadow each other within the app.

        ``own_state_machine``: the one state machine that contains the task, when a construct
        of this library renders it (then no walk of the stack has to find it).
        """
        prefix = task.job_name_prefix
        for other in self._app_tasks():
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
    def tasks(self) -> tuple[ServedTask, ...]:
        return tuple(self._tasks)

    def _app_tasks(self) -> Iterator[ServedTask]:
        """Every task served by a runner of this app: this one's, then its peers'."""
        yield from self._tasks
        for other in self._peers:
            yield from other.tasks

    def containing_state_machines(self, task: ServedTask) -> list[ContainingStateMachine]:
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


__all__ = ["CodeLocation", "ContainingStateMachine", "ServedTask", "TrainingRunner"]
