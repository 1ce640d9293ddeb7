"""``HeterogeneousTrainingTask``: a validated heterogeneous training job as a Step Functions task.

A task state like aws-cdk-lib's ``SageMakerCreateTrainingJob`` (``next``, ``add_retry``,
``add_catch``, ``result_path``, ``result_selector``, ``output_path``, JSONPath or JSONata), that
runs one training job to its end: the spec is validated with every rule at construction, the job
gets instance groups and channel scoping, completion is reported through a task token (the history
stays small however long the job runs), and IAM is narrowed to what the spec declares.

This module builds the task; its parts are ``task_spec`` (the spec file, timeout, keys, region
and image), ``job_names`` (the job-name prefix), ``task_iam`` (execution and control roles),
``retries`` (``CapacityRetry`` and the task's own retriers) and ``task_state`` (the state it
renders).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import Annotations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IValidation

from hetero_constructs.checks.construct_rules import DATA_NETWORK_RULE
from hetero_constructs.constructs import nag, permissions, task_iam
from hetero_constructs.constructs.job_names import (
    check_prefix,
    job_name_prefix_of,
    job_name_violations,
)
from hetero_constructs.constructs.packaging import source_bundle
from hetero_constructs.constructs.paths import child_path
from hetero_constructs.constructs.props import (
    FromSpecFile,
    HeterogeneousTrainingTaskProps,
    keyword_props,
)
from hetero_constructs.constructs.retries import task_retriers
from hetero_constructs.constructs.runner import CodeLocation, ContainingStateMachine, TrainingRunner
from hetero_constructs.constructs.task_spec import (
    completion_seconds,
    region_dlc_image,
    region_violations,
    with_builtin_metrics,
    with_keys,
)
from hetero_constructs.constructs.task_state import SubmitTaskState
from hetero_constructs.constructs.tokens import is_token
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError, Violation

RUNTIME_HELPER = Path(__file__).resolve().parents[1] / "runtime"
RUNTIME_HELPER_PACKAGE = "hetero_runtime"
# The execution role is created once its policy is known, and the policy comes from the request:
# the request is planned with this stand-in for the role's ARN, a deploy-time value (a token) to
# every rule as the role's own ARN is, which then takes its place.
_ROLE_ARN_STAND_IN = "${Token[hetero-constructs.ExecutionRoleArn]}"


@jsii.implements(IValidation)
class _InStateMachine:
    """A task no state machine of its stack contains could never report its job's end."""

    def __init__(self, task: HeterogeneousTrainingTask) -> None:
        self._task = task

    def validate(self) -> list[str]:
        machines = self._task.runner.containing_state_machines(self._task)
        if machines:
            # Known only now that the user's state machines exist; recorded before synthesis.
            acknowledgments = nag.Acknowledgments(self._task, self._task.runner.nag_ids)
            task_iam.acknowledge_executions(acknowledgments, machines)
            acknowledgments.record()
            return []
        return [
            f"The training task {self._task.node.path} is in no state machine of stack "
            f"{self._task.runner.stack.stack_name}. Allowed: a task used by a state machine "
            "defined in the same stack as the task. Fix: chain the task into a state machine "
            "of that stack (its events and permissions are scoped to the stack)."
        ]


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class HeterogeneousTrainingTask(FromSpecFile, SubmitTaskState):
    """A Step Functions task that runs one SageMaker training job to its end.

    Takes the fields of ``HeterogeneousTrainingTaskProps`` as keywords (``spec=...``, the shared
    training props, the state's own). The spec is validated with every rule at construction;
    the first error lists every violation with this task's path. The task's output is
    DescribeTrainingJob's own fields (``TrainingJobName``, ``TrainingJobArn``,
    ``ModelArtifacts.S3ModelArtifacts``, ``AlgorithmSpecification.TrainingImage``,
    ``TrainingJobStatus``, ``SecondaryStatus``, ``ResourceConfig``, ``CreationTime``,
    ``TrainingStartTime``, ``TrainingEndTime``, ``TrainingTimeInSeconds``,
    ``BillableTimeInSeconds``) plus ``Attempt`` and ``Variant``. Failures carry the error names
    of ``TrainingErrors``.

    ``grant_principal`` is the execution role, the role the training jobs run with (as for
    aws-cdk-lib's ``SageMakerCreateTrainingJob``): ``bucket.grant_read(task)`` lets the jobs
    read the bucket.
    """

    @keyword_props(HeterogeneousTrainingTaskProps)
    def __init__(
        self, scope: Construct, construct_id: str, props: HeterogeneousTrainingTaskProps
    ) -> None:
        self._build(scope, construct_id, props, None, scope.node.path)

    def _build(
        self,
        scope: Construct,
        construct_id: str,
        props: HeterogeneousTrainingTaskProps,
        runner: TrainingRunner | None,
        scope_path: str,
    ) -> None:
        """Build the task. ``runner``: the stack's when the caller has it, else it is found
        (or made) once the state exists, so that the stack's constructs keep their order."""
        self._props = props
        path = child_path(scope_path, construct_id)
        _check_state_paths(props, path)
        timeout_seconds = completion_seconds(
            props.spec, props.completion_margin, props.query_language, path
        )
        super().__init__(
            scope,
            construct_id,
            comment=props.comment,
            state_name=props.state_name,
            query_language=props.query_language,
            input_path=props.input_path,
            output_path=props.output_path,
            result_path=props.result_path,
            result_selector=props.result_selector,
            assign=props.assign,
            outputs=props.outputs,
            integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
        )
        self.path: str = path
        self.runner = runner = runner or TrainingRunner.of(scope)
        self.arns = runner.arns
        spec = props.spec
        self.job_name_prefix = job_name_prefix_of(
            spec, props.job_name_prefix, scope_path, construct_id
        )
        check_prefix(self.job_name_prefix, path)
        self.marker = f'"jobNamePrefix":"{self.job_name_prefix}"'
        self.completion_timeout_seconds = timeout_seconds
        # Every acknowledgment of the task, recorded in one call at the end.
        self._acknowledgments = nag.Acknowledgments(self, runner.nag_ids)
        spec = with_keys(spec, props.volume_encryption_key, props.output_encryption_key)
        spec = self._with_network(spec, props.vpc, props.vpc_subnets, props.security_groups)
        if props.acknowledgments:
            spec = dataclasses.replace(
                spec, acknowledgments={**spec.acknowledgments, **props.acknowledgments}
            )
        self.own_metric_names = [metric.name for metric in spec.metric_definitions]
        metric_violations: list[Violation] = []
        if props.builtin_metrics:
            spec, metric_violations = with_builtin_metrics(spec)
        self.builtin_metrics = props.builtin_metrics
        role = props.role or self._spec_role(spec)
        self.code_location = self._code_location(spec, props.include_runtime_helper)
        self.code_asset = self.code_location.asset if self.code_location else None
        # The DLC account is kept apart: as a token it cannot be parsed back out of the URI.
        dlc_image, self._image_account = (
            (None, None)
            if spec.image_uri
            else region_dlc_image(spec, self.arns.region, runner.stack)
        )
        deployment = Deployment(
            job_name=self.job_name_prefix,
            role_arn=role.role_arn if role is not None else _ROLE_ARN_STAND_IN,
            region=self.arns.region,
            submit_directory=self.code_location.url if self.code_location else None,
            dlc_image_uri=dlc_image,
        )
        self.spec = spec
        violations = [
            *region_violations(spec, self.arns.region),
            *job_name_violations(spec, self.job_name_prefix),
            *metric_violations,
        ]
        result = plan(spec, deployment, is_token=is_token)
        # One root cause, one violation: a value the rules already refuse is not refused twice.
        refused = {v.path for v in result.violations}
        violations = [v for v in violations if v.path not in refused]
        if result.request is None or violations:
            raise SpecValidationError([*violations, *result.violations], scope=path)
        self.request: dict[str, Any] = result.request
        statements, pulls_from_ecr, self.channel_prefixes, s3_uris = task_iam.execution_statements(
            self.request,
            spec,
            self.arns,
            job_name_prefix=self.job_name_prefix,
            image_account=self._image_account,
            code_location=self.code_location,
        )
        # A role this task creates takes what every job needs from the stack's managed policy;
        # a role given to the task is the user's, and gets all of it inline.
        shared = None
        if role is None and pulls_from_ecr:
            shared = runner.every_training_job_policy
        else:
            statements += permissions.every_training_job(self.arns, ecr_login=pulls_from_ecr)
        task_iam.acknowledge_execution_policy(
            self._acknowledgments,
            arns=self.arns,
            job_name_prefix=self.job_name_prefix,
            spec=spec,
            statements=statements,
            s3_uris=s3_uris,
        )
        if role is None:
            role = task_iam.execution_role(
                self,
                arns=self.arns,
                job_name_prefix=self.job_name_prefix,
                path=path,
                statements=statements,
                shared=shared,
            )
            # The role's own ARN in place of the stand-in the request was planned with.
            assert self.request["RoleArn"] == _ROLE_ARN_STAND_IN
            self.request["RoleArn"] = role.role_arn
            deployment = dataclasses.replace(deployment, role_arn=self.request["RoleArn"])
        else:
            permissions.policy(self, "ExecutionPolicy", statements, role)
        self.role: iam.IRole = role
        self.deployment = deployment
        self.role_arn: str = deployment.role_arn  # type: ignore[assignment]
        self._control_cfn_role = task_iam.control_role(
            self,
            runner=runner,
            path=path,
            job_name_prefix=self.job_name_prefix,
            own=self._own_state_machine is not None,
            document=self._control_document,
            acknowledgments=self._acknowledgments,
        )
        self.control_role_arn = self._control_cfn_role.attr_arn
        self.acknowledged = result.acknowledged
        if result.acknowledged:
            self._control_cfn_role.add_metadata(
                "hetero-constructs:acknowledged",
                [
                    {"rule": v.rule, "path": v.path, "reason": reason}
                    for v, reason in result.acknowledged
                ],
            )
        runner.register(self, self._own_state_machine)
        self.capacity_retry = props.capacity_retry
        self._retries = task_retriers(props.capacity_retry)
        own = self._own_state_machine
        if own is None:
            # The state's first retriers, before any the user adds (as LambdaInvoke adds its own).
            for retrier in self._retries:
                retrier.add_to(self)
        else:
            task_iam.acknowledge_executions(self._acknowledgments, [own])
        self._acknowledgments.record()
        if own is None:
            # Only the user's state machines are known after construction.
            self.node.add_validation(_InStateMachine(self))

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The execution role: what is granted to the task is granted to its training jobs."""
        return self.role

    @property
    def longest_run_seconds(self) -> int | None:
        """How long an entry of the task may take with every capacity retry (None: a token)."""
        timeout = self.completion_timeout_seconds
        if not isinstance(timeout, int):
            return None
        retry = self.capacity_retry
        attempts = 1 + (retry.max_attempts if retry else 0)
        return attempts * timeout + sum(retry.delays_seconds() if retry else [])

    # -- construction ---------------------------------------------------------------------------

    def _with_network(
        self,
        spec: TrainingSpec,
        vpc: ec2.IVpc | None,
        selection: ec2.SubnetSelection | None,
        groups: Sequence[ec2.ISecurityGroup] | None,
    ) -> TrainingSpec:
        """CDK's network objects as the spec's subnet and security-group ids."""
        self._connections: ec2.Connections | None = None
        if vpc is None:
            if selection is not None or groups:
                raise ValueError(
                    f"{self.path}: vpc_subnets or security_groups are given without a vpc. "
                    "Fix: pass vpc=... too (or the spec's subnets and security_group_ids)."
                )
            if spec.security_group_ids:
                self._warn_data_network(spec)
            return spec
        if spec.subnets or spec.security_group_ids:
            raise ValueError(
                f"{self.path}: both vpc and the spec's subnets/security_group_ids are given. "
                "Allowed: one of the two. Fix: drop the spec's ids or the vpc props."
            )
        selection = selection or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        chosen = vpc.select_subnets(
            **{
                key: getattr(selection, key)
                for key in (
                    "availability_zones",
                    "one_per_az",
                    "subnet_filters",
                    "subnet_group_name",
                    "subnet_type",
                    "subnets",
                )
                if getattr(selection, key) is not None
            }
        )
        if not groups:
            group = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description=f"Training jobs of {self.path}",
                allow_all_outbound=True,
            )
            # The instances of a distributed job talk to each other on every port (NCCL, MPI).
            group.add_ingress_rule(group, ec2.Port.all_traffic(), "between the job's instances")
            groups = [group]
        else:
            self._warn_data_network(spec)
        self._connections = ec2.Connections(security_groups=list(groups))
        return dataclasses.replace(
            spec,
            subnets=tuple(chosen.subnet_ids),
            security_group_ids=tuple(g.security_group_id for g in groups),
        )

    def _warn_data_network(self, spec: TrainingSpec) -> None:
        """The user's own security groups: whether they let the groups talk is theirs to check."""
        if len(spec.instance_groups) < 2:
            return
        # A warning annotation, not a violation: the library cannot read an imported group's
        # rules, and blocking synth on what may be right would make every such app acknowledge.
        Annotations.of(self).add_warning_v2(
            f"hetero-constructs:{DATA_NETWORK_RULE}",
            f"[{DATA_NETWORK_RULE}] the job's security groups are your own: they must allow "
            "traffic between the job's instances (the data plane's port, "
            "hetero_runtime.data's 7471 by default, and NCCL/MPI's ports). Fix: a "
            "self-referencing ingress rule on the group, or leave security_groups out and the "
            "task creates one that allows it.",
        )

    @property
    def connections(self) -> ec2.Connections:
        """The jobs' security groups (``task.connections.allow_to(database, ...)``)."""
        if self._connections is None:  # no VPC: created when asked for, empty
            self._connections = ec2.Connections()
        return self._connections

    def _spec_role(self, spec: TrainingSpec) -> iam.IRole | None:
        """A spec's own ``role`` ARN is honoured (imported), never silently replaced."""
        if not spec.role or not isinstance(spec.role, str) or not spec.role.startswith("arn:"):
            return None
        return iam.Role.from_role_arn(self, "SpecRole", spec.role, mutable=False)

    def _code_location(self, spec: TrainingSpec, include_helper: bool) -> CodeLocation | None:
        """``source_dir`` (or the lone entry point) as a deterministic gzip tar asset."""
        source = spec.source_dir
        if source is not None and (is_token(source) or source.startswith("s3://")):
            return None
        extra = {RUNTIME_HELPER_PACKAGE: RUNTIME_HELPER} if include_helper else {}
        if source is not None and (Path(source) / RUNTIME_HELPER_PACKAGE).exists():
            extra = {}  # the code ships its own copy of the helper; it wins
        if source is None:
            entry = Path(spec.entry_point)
            if not entry.is_file():
                return None  # FW-ENTRY-POINT explains; without a file there is nothing to ship
            extra[entry.name] = entry
            bundle = source_bundle(None, extra)
        elif not Path(source).is_dir():
            return None  # FW-SOURCE-DIR explains
        else:
            bundle = source_bundle(Path(source), extra)
        return self.runner.code_location(bundle)

    # -- permissions ------------------------------------------------------------------------------

    def _control_document(self) -> dict[str, Any]:
        return permissions.document(self.control_statements())

    def control_statements(self) -> list[permissions.Statement]:
        """What the control role may do: this prefix's jobs, the role, its state machines."""
        own = self._own_state_machine
        machines = [own] if own is not None else self.runner.containing_state_machines(self)
        return task_iam.control_statements(
            arns=self.arns,
            job_name_prefix=self.job_name_prefix,
            request=self.request,
            spec=self.spec,
            runner_id=self.runner.runner_id,
            role_arn=self.role_arn,
            machines=machines,
        )


def _check_state_paths(props: HeterogeneousTrainingTaskProps, where: str) -> None:
    """The state's JSONPaths start with ``$`` (as aws-cdk-lib checks at synth; here at once)."""
    for name in ("input_path", "output_path", "result_path"):
        value = getattr(props, name)
        if value is None or is_token(value) or value.startswith("$"):
            continue
        fix = f"a JSONPath such as '$.training' for the state's {name}"
        if name == "output_path" and value.startswith("s3://"):
            fix = (
                "an S3 location is the spec's output_path: set it in the spec, or with "
                f"from_spec_file(..., spec_overrides={{'output_path': {value!r}}})"
            )
        raise ValueError(
            f"{where}: {name} {value!r} is not a JSONPath. Allowed: a path starting with '$'. "
            f"Fix: {fix}."
        )


class OwnStateMachineTask(HeterogeneousTrainingTask):
    """The task of a ``HeterogeneousTrainingJob``: its state machine is known at construction.

    The construct renders the task into its own state machine (one JSON document built in
    Python), registers that state machine with the runner, and passes the whole execution input
    as the overrides; nothing about the task is left to find or render at synth.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        props: HeterogeneousTrainingTaskProps,
        *,
        own_state_machine: ContainingStateMachine,
        runner: TrainingRunner,
        scope_path: str,
    ) -> None:
        self._own_state_machine = own_state_machine
        self._build(scope, construct_id, props, runner, scope_path)

    def _input_fields(self, jsonata: bool) -> dict[str, Any]:
        return {"input": "{% $states.input %}"} if jsonata else {"input.$": "$"}


__all__ = ["HeterogeneousTrainingTask", "OwnStateMachineTask"]
