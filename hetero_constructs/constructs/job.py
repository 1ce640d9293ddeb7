"""``HeterogeneousTrainingJob``: a training task in a state machine of its own.

An execution runs one training job to its end; its input is the task's overrides. Built from
``HeterogeneousTrainingTask``, so everything the task checks and grants holds here too.
"""

from __future__ import annotations

import json
import math
import os
import re
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
from hetero_constructs.constructs.job_names import job_name_prefix_of
from hetero_constructs.constructs.paths import child_path, remember_path
from hetero_constructs.constructs.retries import CapacityRetry
from hetero_constructs.constructs.runner import ContainingStateMachine, TrainingRunner
from hetero_constructs.constructs.task import OwnStateMachineTask
from hetero_constructs.constructs.task_spec import spec_from_file, split_spec_fields
from hetero_constructs.constructs.task_state import STRING_TOKEN
from hetero_constructs.constructs.tokens import is_token
from hetero_constructs.planning import plan
from hetero_constructs.run import lifecycle
from hetero_constructs.run.overrides import apply_overrides
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.file.writer import spec_to_dict
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError, Violation

_TASK_ID = "Task"
DEFAULT_CAPACITY_RETRY = CapacityRetry()
_STATE_NAME = "Run training job"
_SUCCEEDED = "Training completed"
_FAILED = "Training failed"
_FAILED_COMMENT = "Carries the HeteroTraining.* error and its cause."
# The ids of an L2 state machine and of its resource: the logical id (and so the state machine,
# whose name is fixed) stays what it has been.
_STATE_MACHINE_ID = "Resource"


@jsii.implements(ec2.IConnectable)
class HeterogeneousTrainingJob(Construct):
    """A SageMaker training job (heterogeneous or homogeneous), validated at synth time.

    Every rule of ``hetero_constructs.checks`` runs when the construct is created; the first error
    lists every violation with this construct's path. CDK tokens are skipped, not guessed.

    ``state_machine``'s executions each run one training job to its end (input: the overrides,
    see the README); ``task`` is its ``HeterogeneousTrainingTask``. The state machine's ARN is a
    stack output (``hetero-train run STACK/ID`` finds it).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: TrainingSpec,
        role: iam.IRole | None = None,
        job_name_prefix: str | None = None,
        volume_encryption_key: kms.IKey | None = None,
        output_encryption_key: kms.IKey | None = None,
        include_runtime_helper: bool = True,
        completion_margin: Duration | None = None,
        log_retention: logs.RetentionDays | None = None,
        log_encryption_key: kms.IKey | None = None,
        include_execution_data: bool = False,
        schedule: events.Schedule | None = None,
        schedule_input: Mapping[str, Any] | None = None,
        alarm_topic: sns.ITopic | None = None,
        capacity_retry: CapacityRetry | None = DEFAULT_CAPACITY_RETRY,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        acknowledgments: Mapping[str, str] | None = None,
    ) -> None:
        """
        :param spec: the job, with the SageMaker Python SDK's names (see ``TrainingSpec``).
        :param role: the SageMaker execution role; by default one is created with least privilege.
        :param job_name_prefix: every job name starts with it; default: the spec's
            ``base_job_name``, else the id plus a digest.
        :param volume_encryption_key: KMS key for the ML storage volumes (sets volume_kms_key).
        :param output_encryption_key: KMS key for the model artifacts (sets output_kms_key).
        :param include_runtime_helper: ship ``hetero_runtime`` (instance-group facts) in the code.
        :param completion_margin: time beyond max_run (or max_wait with spot) for startup and
            upload before the wait for completion times out; default 6 hours.
        :param log_retention: with ``log_encryption_key``: retention of this job's own log group.
        :param log_encryption_key: give the state machine a log group of its own, encrypted
            with this key; by default the stack's training state machines share one.
        :param include_execution_data: log execution inputs and outputs too. They carry the
            overrides and task tokens, so this is off by default; on, the log group holds them.
        :param schedule: start executions on this schedule, with ``schedule_input`` as input.
        :param schedule_input: the execution input (overrides) of scheduled runs.
        :param alarm_topic: SNS topic for the alarm on failed, timed-out and aborted executions.
        :param capacity_retry: retries on capacity and resource-limit failures, each on the next
            fallback of the instance groups; ``None`` turns them off. Default: 3 retries, 5
            minutes doubling, at most an hour apart.
        :param vpc: run the jobs in this VPC (instead of the spec's raw subnet ids).
        :param vpc_subnets: which of its subnets; default: the private ones.
        :param security_groups: the jobs' security groups; by default one that lets a job's
            instances reach each other.
        :param acknowledgments: warning rules weighed for this job, rule id -> reason; recorded
            in the template's metadata. Errors cannot be acknowledged.
        """
        super().__init__(scope, construct_id)
        self.path: str = child_path(scope, construct_id)
        remember_path(self, self.path)
        if schedule_input is not None and schedule is None:
            raise ValueError(
                f"{self.path}: schedule_input is given without a schedule. "
                "Fix: pass schedule=events.Schedule.rate(...) too."
            )
        prefix = job_name_prefix_of(spec, job_name_prefix, scope, construct_id)
        jsonata = is_token(spec.max_wait if spec.use_spot_instances else spec.max_run)
        self.query_language = sfn.QueryLanguage.JSONATA if jsonata else sfn.QueryLanguage.JSON_PATH
        self.runner = TrainingRunner.of(scope)
        self.runner.serve(self)
        arns = self.runner.arns
        # Named after the prefix, so the task's policies name it without a reference.
        own = ContainingStateMachine(
            arns.state_machine(prefix),
            arns.arn("states", f"execution:{prefix}:*"),
            f"{self.path}/{_STATE_MACHINE_ID}/Resource",
        )
        self.task = OwnStateMachineTask(
            self,
            _TASK_ID,
            own_state_machine=own,
            spec=spec,
            role=role,
            job_name_prefix=prefix,
            volume_encryption_key=volume_encryption_key,
            output_encryption_key=output_encryption_key,
            include_runtime_helper=include_runtime_helper,
            completion_margin=completion_margin,
            query_language=self.query_language,
            state_name=_STATE_NAME,
            capacity_retry=capacity_retry,
            vpc=vpc,
            vpc_subnets=vpc_subnets,
            security_groups=security_groups,
            acknowledgments=acknowledgments,
            comment="Runs the training job to its end; fails with HeteroTraining.* errors.",
        )
        self.spec = self.task.spec
        self.request = self.task.request
        self.deployment = self.task.deployment
        self.job_name_prefix = prefix
        self.role = self.task.role
        self.code_asset = self.task.code_asset
        self.state_machine_resource = self._state_machine(
            log_retention, log_encryption_key, include_execution_data
        )
        self._state_machine_reference: sfn.IStateMachine | None = None
        CfnOutput(
            self,
            "StateMachineArnOutput",
            value=self.state_machine_arn,
            description=f"{lifecycle.STATE_MACHINE_OUTPUT_PREFIX}{self.path}",
        )
        if schedule is not None:
            self._schedule(schedule, schedule_input or {})
        self.alarms = [self._alarm(alarm_topic)]

    @classmethod
    def from_spec_file(
        cls, scope: Construct, construct_id: str, path: str | os.PathLike[str], **props: Any
    ) -> HeterogeneousTrainingJob:
        """The job described by a spec file (JSON, or YAML with .yaml/.yml).

        Any ``TrainingSpec`` field given as a keyword (e.g. ``output_path=bucket_uri(...)``,
        ``subnets``, ``role``) is merged over the file's; the other keywords are the
        construct's props.
        """
        spec_values, job_props = split_spec_fields(props, cls.__init__)
        spec = spec_from_file(path, spec_values, f"{scope.node.path}/{construct_id}")
        return cls(scope, construct_id, spec=spec, **job_props)

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
        """The definition as JSON text, with the task's own tokens in its strings.

        aws-cdk-lib's ``to_json_string`` renders a string token inside JSON the way CDK renders
        any token inside a string: ``Fn::Join`` around its value. The text is written here
        instead, as ``JSON.stringify`` writes it, when every token in it is one of the task's
        own string-valued tokens (ARNs, partition, region, account, the code's URL). Any other
        token (a user's, a number, a list) is left to ``to_json_string``, which knows its type.
        """
        definition = self._definition()
        text = _json_text(definition)
        if (
            text is not None
            and "#{Token[" not in text
            and set(STRING_TOKEN.findall(text)) <= self.task.string_tokens
        ):
            return text
        return self.runner.stack.to_json_string(definition)

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

    # -- public helpers ----------------------------------------------------------------------

    @property
    def connections(self) -> ec2.Connections:
        """The jobs' security groups (``job.connections.allow_to(database, ...)``)."""
        return self.task.connections

    def grant_start_execution(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` start training runs (executions of the state machine)."""
        return self.state_machine.grant_start_execution(grantee)

    @property
    def instance_types(self) -> Sequence[str]:
        resources = self.request["ResourceConfig"]
        groups = resources.get("InstanceGroups")
        return [g["InstanceType"] for g in groups] if groups else [resources["InstanceType"]]


# A UTF-16 surrogate: JSON.stringify escapes a lone one, Python's json writes it as it is.
_SURROGATE = re.compile("[\ud800-\udfff]")
# Integers beyond this are not exact in JavaScript; JSON.stringify would print other digits.
_EXACT_IN_JAVASCRIPT = 2**53


def _json_text(value: Any) -> str | None:
    """``value`` as JavaScript's ``JSON.stringify`` writes it (compact), or None.

    None for what Python would write differently: whole or exponent floats (Python writes 2.0
    where JavaScript writes 2; a CDK number token is a float of about -1.9e289), integers
    JavaScript cannot hold exactly, keys that are not strings, and lone surrogates (which
    JavaScript escapes).
    """
    if not _written_alike(value):
        return None
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return None if _SURROGATE.search(text) else text


def _written_alike(value: Any) -> bool:
    """Whether Python's json and JavaScript's JSON.stringify write ``value`` alike."""
    if isinstance(value, str) or value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= _EXACT_IN_JAVASCRIPT
    if isinstance(value, float):  # e.g. a backoff rate of 1.5; not 2.0, 1e-7 or a token
        return math.isfinite(value) and not value.is_integer() and "e" not in repr(value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _written_alike(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_written_alike(item) for item in value)
    return False


__all__ = [
    "DEFAULT_CAPACITY_RETRY",
    "HeterogeneousTrainingJob",
]
