"""``HeterogeneousTrainingJob``: a training task in a state machine of its own.

An execution runs one training job to its end; its input is the task's overrides. Built from
``HeterogeneousTrainingTask``, so everything the task checks and grants holds here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import CfnOutput, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from hetero_constructs.constructs import permissions
from hetero_constructs.constructs.dashboard import TrainingDashboard
from hetero_constructs.constructs.job_names import job_name_prefix_of
from hetero_constructs.constructs.paths import child_path
from hetero_constructs.constructs.props import (
    FromSpecFile,
    HeterogeneousTrainingJobProps,
    HeterogeneousTrainingTaskProps,
    keyword_props,
    shared_props,
)
from hetero_constructs.constructs.runner import ContainingStateMachine, TrainingRunner
from hetero_constructs.constructs.task import OwnStateMachineTask
from hetero_constructs.constructs.tokens import is_token
from hetero_constructs.contract import lifecycle
from hetero_constructs.contract.overrides import apply_overrides
from hetero_constructs.planning import plan
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.file.writer import spec_to_dict
from hetero_constructs.spec.violations import SpecValidationError, Violation

_TASK_ID = "Task"
_STATE_NAME = "Run training job"
_SUCCEEDED = "Training completed"
_FAILED = "Training failed"
_FAILED_COMMENT = "Carries the HeteroTraining.* error and its cause."
# The ids of an L2 state machine and of its resource: the logical id (and so the state machine,
# whose name is fixed) stays what it has been.
_STATE_MACHINE_ID = "Resource"


@jsii.implements(ec2.IConnectable, iam.IGrantable)
class HeterogeneousTrainingJob(FromSpecFile, Construct):
    """A SageMaker training job (heterogeneous or homogeneous), validated at synth time.

    Takes the fields of ``HeterogeneousTrainingJobProps`` as keywords (``spec=...``, the shared
    training props, its state machine's). Every rule of ``hetero_constructs.checks`` runs when
    the construct is created; the first error lists every violation with this construct's path.
    CDK tokens are skipped, not guessed.

    ``state_machine``'s executions each run one training job to its end (input: the overrides,
    see the README); ``task`` is its ``HeterogeneousTrainingTask``. The state machine's ARN is a
    stack output (``hetero-train run STACK/ID`` finds it). ``grant_principal`` is the execution
    role the training jobs run with (``bucket.grant_read(job)``); ``grant_start_execution``
    lets a principal start runs; the ``metric_*`` methods are those of the state machine's
    executions, and ``metric_dead_letters`` the runner's.
    """

    @keyword_props(HeterogeneousTrainingJobProps)
    def __init__(
        self, scope: Construct, construct_id: str, props: HeterogeneousTrainingJobProps
    ) -> None:
        super().__init__(scope, construct_id)
        scope_node = scope.node
        scope_path = scope_node.path
        self.path: str = child_path(scope_path, construct_id)
        if props.schedule_input is not None and props.schedule is None:
            raise ValueError(
                f"{self.path}: schedule_input is given without a schedule. "
                "Fix: pass schedule=events.Schedule.rate(...) too."
            )
        spec = props.spec
        prefix = job_name_prefix_of(spec, props.job_name_prefix, scope_path, construct_id)
        jsonata = is_token(spec.max_wait if spec.use_spot_instances else spec.max_run)
        self.query_language = sfn.QueryLanguage.JSONATA if jsonata else sfn.QueryLanguage.JSON_PATH
        self.runner = TrainingRunner._found_from(scope, scope_node)
        arns = self.runner.arns
        # Named after the prefix, so the task's policies name it without a reference.
        own = ContainingStateMachine(
            arns.state_machine(prefix),
            arns.arn("states", f"execution:{prefix}:*"),
            f"{self.path}/{_STATE_MACHINE_ID}/Resource",
        )
        task_props = HeterogeneousTrainingTaskProps(
            **{**shared_props(props), "job_name_prefix": prefix},
            query_language=self.query_language,
            state_name=_STATE_NAME,
            comment="Runs the training job to its end; fails with HeteroTraining.* errors.",
        )
        try:
            self.task = OwnStateMachineTask(
                self,
                _TASK_ID,
                task_props,
                own_state_machine=own,
                runner=self.runner,
                scope_path=self.path,
            )
        except SpecValidationError as error:
            # The user's construct, not the task inside it, is where the spec was given.
            raise error.with_scope(self.path) from None
        self.spec = self.task.spec
        self.request = self.task.request
        self.deployment = self.task.deployment
        self.job_name_prefix = prefix
        self.role = self.task.role
        self.code_asset = self.task.code_asset
        self.state_machine_resource = self._state_machine(
            props.log_retention, props.log_encryption_key, props.include_execution_data
        )
        self._state_machine_reference: sfn.IStateMachine | None = None
        CfnOutput(
            self,
            "StateMachineArnOutput",
            value=self.state_machine_arn,
            description=f"{lifecycle.STATE_MACHINE_OUTPUT_PREFIX}{self.path}",
        )
        if props.schedule is not None:
            self._schedule(props.schedule, props.schedule_input or {})
        self.alarms = [self._alarm(props.alarm_topic)]
        self._dashboard: TrainingDashboard | None = None

    # -- the state machine -----------------------------------------------------------------------

    @property
    def state_machine(self) -> sfn.IStateMachine:
        """The state machine (``grant_start_execution``, ``StepFunctionsStartExecution``, metrics).

        Its ARN is the resource's ``Ref``, as an L2 state machine's is; made when first asked
        for (most apps never ask).
        """
        if self._state_machine_reference is None:
            self._state_machine_reference = sfn.StateMachine.from_state_machine_arn(
                self, "StateMachine", self.state_machine_resource.ref
            )
        return self._state_machine_reference

    @property
    def state_machine_name(self) -> str:
        """Named after the prefix, so policies can name it without a reference."""
        return self.job_name_prefix

    @property
    def state_machine_arn(self) -> str:
        return self.task.arns.state_machine(self.state_machine_name)

    @property
    def completion_timeout_seconds(self) -> int | str:
        return self.task.completion_timeout_seconds

    def _state_machine(
        self,
        log_retention: logs.RetentionDays | None,
        log_key: kms.IKey | None,
        include_execution_data: bool,
    ) -> sfn.CfnStateMachine:
        """The state machine: the task, then success or the failure it caught (one document)."""
        if log_key is not None:
            permissions.allow_log_encryption(log_key, self.task.arns)
            log_group_arn = logs.LogGroup(
                self,
                "StateMachineLogs",
                retention=log_retention or self.runner.log_retention,
                encryption_key=log_key,
                removal_policy=RemovalPolicy.DESTROY,
                log_group_name=f"/aws/vendedlogs/states/{self.state_machine_name}",
            ).log_group_arn
        else:
            log_group_arn = self.runner.state_machine_logs_arn
        self._state_machine_scope = Construct(self, _STATE_MACHINE_ID)
        resource = sfn.CfnStateMachine(
            self._state_machine_scope,
            "Resource",
            definition_string=self._definition_string(),
            # jsii maps (its property names), as for the alarm: no struct objects to check.
            logging_configuration={
                "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": log_group_arn}}],
                "includeExecutionData": include_execution_data,
                "level": "ALL",
            },
            role_arn=self.runner.state_machine_role_arn,
            state_machine_name=self.state_machine_name,
            tracing_configuration={"enabled": True},
        )
        resource.apply_removal_policy(RemovalPolicy.DESTROY)
        self.runner.own_state_machine_resource(resource)
        return resource

    def _definition_string(self) -> str:
        """The definition as JSON text, rendered by aws-cdk-lib (tokens as ``Fn::Join``)."""
        return self.runner.stack.to_json_string(self._definition())

    def _definition(self) -> dict[str, Any]:
        """The definition aws-cdk-lib renders for this chain, built in Python."""
        jsonata = self.query_language == sfn.QueryLanguage.JSONATA
        failed: dict[str, Any] = {"Type": "Fail", "Comment": _FAILED_COMMENT}
        if jsonata:
            failed |= {"Error": "{% $states.input.Error %}", "Cause": "{% $states.input.Cause %}"}
        else:
            failed |= {"ErrorPath": "$.Error", "CausePath": "$.Cause"}
        definition: dict[str, Any] = {
            "StartAt": _STATE_NAME,
            "States": {
                _STATE_NAME: self.task.own_state_json(next_state=_SUCCEEDED, catch_state=_FAILED),
                _SUCCEEDED: {"Type": "Succeed"},
                _FAILED: failed,
            },
        }
        # A run that is retrying for capacity is not timed out: the whole run may take every
        # attempt, every wait between them, and an hour for stuck submissions.
        longest = self.task.longest_run_seconds
        if longest is not None:
            definition["TimeoutSeconds"] = longest + 3600
        definition["QueryLanguage"] = "JSONata" if jsonata else "JSONPath"
        return definition

    def _schedule(self, schedule: events.Schedule, schedule_input: Mapping[str, Any]) -> None:
        self.check_overrides(schedule_input, "schedule_input")
        events.Rule(
            self,
            "Schedule",
            schedule=schedule,
            description=f"Starts {self.path} on a schedule",
            targets=[
                targets.SfnStateMachine(
                    self.state_machine,
                    input=events.RuleTargetInput.from_object(dict(schedule_input)),
                    # Where the target puts its role for an L2 state machine: same logical id.
                    role=iam.Role(
                        self._state_machine_scope,
                        "EventsRole",
                        assumed_by=iam.ServicePrincipal("events.amazonaws.com"),
                    ),
                )
            ],
        )

    def check_overrides(self, overrides: Mapping[str, Any], what: str = "overrides") -> None:
        """Validate an execution input at synth, as the submit Lambda will at run time."""
        overridden = apply_overrides(
            spec_to_dict(self.spec), overrides, channel_prefixes=self.task.channel_prefixes
        )
        violations: list[Violation] = list(overridden.violations)
        if not violations:
            reading = read_spec(overridden.spec)
            violations += reading.violations
            if reading.spec is not None:
                violations += plan(reading.spec, self.deployment, is_token=is_token).violations
        if violations:
            raise SpecValidationError(violations, scope=f"{self.path} {what}")

    def _alarm(self, topic: sns.ITopic | None) -> cloudwatch.CfnAlarm:
        """One alarm: executions that failed, timed out or were aborted (5-minute sums)."""
        # The queries as jsii maps (its property names): struct objects cost type checks and
        # conversions on both sides of jsii for the same template.
        dimensions = [{"name": "StateMachineArn", "value": self.state_machine_arn}]
        metrics: list[Any] = [
            {
                "id": f"m{index}",
                "returnData": False,
                "metricStat": {
                    "metric": {
                        "namespace": "AWS/States",
                        "metricName": metric,
                        "dimensions": dimensions,
                    },
                    "period": 300,
                    "stat": "Sum",
                },
            }
            for index, metric in enumerate(
                ("ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted")
            )
        ]
        metrics.append(
            {
                "id": "ended",
                "expression": "FILL(m0, 0) + FILL(m1, 0) + FILL(m2, 0)",
                "label": "Training runs that failed, timed out or were aborted",
                "returnData": True,
            }
        )
        return cloudwatch.CfnAlarm(
            self,
            "RunsEndedBadlyAlarm",
            metrics=metrics,
            evaluation_periods=1,
            threshold=1,
            comparison_operator="GreaterThanOrEqualToThreshold",
            treat_missing_data="notBreaching",
            alarm_description=f"A training run of {self.path} failed, timed out or was aborted",
            alarm_actions=[topic.topic_arn] if topic is not None else None,
        )

    # -- the dashboard ---------------------------------------------------------------------------

    @property
    def dashboard(self) -> TrainingDashboard:
        """The job's CloudWatch dashboard (one row per instance group, the job's metrics, the
        runs); made with ``add_dashboard()``'s defaults when first asked for."""
        return self._dashboard if self._dashboard is not None else self.add_dashboard()

    def add_dashboard(
        self,
        *,
        dashboard_name: str | None = None,
        title: str | None = None,
        period: Duration | None = None,
    ) -> TrainingDashboard:
        """Add the job's dashboard (once): ``dashboard_name`` (default: CloudFormation's),
        ``title`` (default: the construct's path), ``period`` of the graphs (default 1 minute).
        """
        if self._dashboard is not None:
            raise ValueError(
                f"{self.path} has a dashboard already. Fix: call add_dashboard() once, before "
                "reading .dashboard, or use the one it returned."
            )
        self._dashboard = TrainingDashboard(
            self,
            "Dashboard",
            task=self.task,
            state_machine_arn=self.state_machine_arn,
            dashboard_name=dashboard_name,
            title=title or f"Training job {self.path}",
            period=period,
        )
        return self._dashboard

    # -- public helpers ----------------------------------------------------------------------

    @property
    def connections(self) -> ec2.Connections:
        """The jobs' security groups (``job.connections.allow_to(database, ...)``)."""
        return self.task.connections

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The execution role, the role the training jobs run with.

        What is granted to the job is granted to its training jobs (``bucket.grant_read(job)``),
        as with aws-cdk-lib's ``SageMakerCreateTrainingJob``. A role the spec names by ARN is
        imported as immutable: grants to it change nothing, as for any such role in CDK. The
        state machine's own role is shared by the stack's jobs and holds only the submit call.
        """
        return self.task.role

    def grant_start_execution(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` start training runs (executions of the state machine)."""
        return self.state_machine.grant_start_execution(grantee)

    def grant_redrive_execution(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` redrive runs that failed (``hetero-train redrive``,
        ``TrainingRun.redrive()``): ``states:RedriveExecution`` on the state machine's
        executions."""
        return self.state_machine.grant_redrive_execution(grantee)

    # -- metrics (each takes cloudwatch.MetricOptions' keywords: period, statistic, label...) --

    def metric(self, metric_name: str, **options: Any) -> cloudwatch.Metric:
        """A metric of the state machine's executions (namespace AWS/States), sums by default."""
        return self.state_machine.metric(metric_name, **options)

    def metric_started(self, **options: Any) -> cloudwatch.Metric:
        """Training runs started (ExecutionsStarted)."""
        return self.state_machine.metric_started(**options)

    def metric_succeeded(self, **options: Any) -> cloudwatch.Metric:
        """Training runs that ended with their job completed (ExecutionsSucceeded)."""
        return self.state_machine.metric_succeeded(**options)

    def metric_failed(self, **options: Any) -> cloudwatch.Metric:
        """Training runs that failed, with one of ``TrainingErrors`` (ExecutionsFailed)."""
        return self.state_machine.metric_failed(**options)

    def metric_timed_out(self, **options: Any) -> cloudwatch.Metric:
        """Training runs that outlived every attempt and wait (ExecutionsTimedOut)."""
        return self.state_machine.metric_timed_out(**options)

    def metric_aborted(self, **options: Any) -> cloudwatch.Metric:
        """Training runs stopped by someone; their job is stopped too (ExecutionsAborted)."""
        return self.state_machine.metric_aborted(**options)

    def metric_dead_letters(self, **options: Any) -> cloudwatch.Metric:
        """Events and invocations of the runner that failed every delivery, waiting in its
        dead-letter queue (ApproximateNumberOfMessagesVisible, maximum by default). The queue is
        the stack's, shared by its training constructs; the reconciler settles their runs."""
        return self.runner.dead_letters.metric_approximate_number_of_messages_visible(
            **{"statistic": "Maximum", **options}
        )

    @property
    def instance_types(self) -> Sequence[str]:
        resources = self.request["ResourceConfig"]
        groups = resources.get("InstanceGroups")
        return [g["InstanceType"] for g in groups] if groups else [resources["InstanceType"]]


__all__ = ["HeterogeneousTrainingJob"]
