"""``HeterogeneousTrainingTask``: a validated heterogeneous training job as a Step Functions task.

A task state like aws-cdk-lib's ``SageMakerCreateTrainingJob`` (``next``, ``add_retry``,
``add_catch``, ``result_path``, ``result_selector``, ``output_path``, JSONPath or JSONata), that
runs one training job to its end: the spec is validated with every rule at construction, the job
gets instance groups and channel scoping, completion is reported through a task token (the history
stays small however long the job runs), and IAM is narrowed to what the spec declares.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard

import jsii
from aws_cdk import Aws, Duration, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.region_info import FactName, RegionInfo
from constructs import Construct, IValidation

from hetero_constructs.checks.construct_rules import (
    BASE_JOB_NAME_RULE,
    JOB_NAME_RULE,
    REGION_RULE,
    TIMEOUT_TOKEN_RULE,
)
from hetero_constructs.constructs import conditions, nag, permissions
from hetero_constructs.constructs.packaging import source_bundle
from hetero_constructs.constructs.paths import child_path, remember_path
from hetero_constructs.constructs.runner import CodeLocation, ContainingStateMachine, TrainingRunner
from hetero_constructs.constructs.tokens import at_synth, is_token
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment, RuleContext
from hetero_constructs.request.image_uri import image_repository, image_tag
from hetero_constructs.run import lifecycle
from hetero_constructs.run.naming import sanitize_name
from hetero_constructs.service import catalog
from hetero_constructs.spec import variants
from hetero_constructs.spec.file.reader import read_spec_file
from hetero_constructs.spec.file.writer import spec_to_dict
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError, Violation, did_you_mean

RUNTIME_HELPER = Path(__file__).resolve().parents[1] / "runtime"
RUNTIME_HELPER_PACKAGE = "hetero_runtime"
MAX_PREFIX = 40
DEFAULT_COMPLETION_MARGIN_SECONDS = 6 * 3600
# Step Functions' own errors for a Lambda invoke that did not complete; the submission is
# idempotent per attempt (see lambda/submit.py), so retrying them is safe.
LAMBDA_ERRORS = (
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
)
# The execution role is created once its policy is known, and the policy comes from the request:
# the request is planned with this stand-in for the role's ARN, a deploy-time value (a token) to
# every rule as the role's own ARN is, which then takes its place.
_ROLE_ARN_STAND_IN = "${Token[hetero-constructs.ExecutionRoleArn]}"
_CONTROL_POLICY = "TrainingControl"
# A string token as CDK encodes it in a string.
STRING_TOKEN = re.compile(r"\$\{Token\[[^\]]*\]\}")
# Context-object fields the submit Lambda needs: they identify the attempt and its job.
_CONTEXT = {
    "taskToken": "Task.Token",
    "executionArn": "Execution.Id",
    "executionStartTime": "Execution.StartTime",
    "stateName": "State.Name",
    "stateEnteredTime": "State.EnteredTime",
    "retryCount": "State.RetryCount",
    "stateMachineArn": "StateMachine.Id",
}


@dataclasses.dataclass(frozen=True)
class CapacityRetry:
    """Retry a training task that found no capacity: a new job per attempt, next fallback first.

    Only ``HeteroTraining.CapacityError`` and ``HeteroTraining.ResourceLimitExceeded`` are
    retried - never a training failure or invalid overrides. Each retry creates a fresh job
    (its name includes the attempt) on the next fallback variant of the instance groups.
    """

    #: Retries after the first attempt.
    max_attempts: int = 3
    #: Wait before the first retry; multiplied by ``backoff_rate`` each time.
    interval: Duration = dataclasses.field(default_factory=lambda: Duration.minutes(5))
    backoff_rate: float = 2.0
    #: The longest wait between two attempts.
    max_delay: Duration | None = dataclasses.field(default_factory=lambda: Duration.hours(1))
    #: Full jitter: many runs that failed together do not all retry together.
    jitter: bool = True

    @functools.cached_property
    def seconds(self) -> tuple[int, int | None]:
        """``interval`` and ``max_delay`` in seconds, converted once (each is a jsii call)."""
        return (
            int(self.interval.to_seconds()),
            int(self.max_delay.to_seconds()) if self.max_delay else None,
        )

    def delays_seconds(self) -> list[int]:
        """The waits before each retry, as configured (jitter only shortens them)."""
        first, cap = self.seconds
        delays = []
        for attempt in range(self.max_attempts):
            delay = int(first * self.backoff_rate**attempt)
            delays.append(min(delay, cap) if cap is not None else delay)
        return delays


@functools.cache
def _region_facts(region: str) -> tuple[str | None, str | None]:
    """aws-cdk-lib's DLC account and domain suffix for a concrete region."""
    info = RegionInfo.get(region)
    return info.dlc_repository_account, info.domain_suffix


def default_job_name_prefix(scope: Construct, construct_id: str) -> str:
    """The construct id plus a digest of its path (which starts with the stack's name)."""
    digest = hashlib.sha256(f"{scope.node.path}/{construct_id}".encode()).hexdigest()[:8]
    readable = sanitize_name(construct_id)[: MAX_PREFIX - 9].rstrip("-") or "job"
    return f"{readable}-{digest}".lower()


def usable_prefix(value: Any) -> TypeGuard[str]:
    """Whether ``value`` can start every job name: it scopes IAM and event routing at synth."""
    return (
        isinstance(value, str)
        and not is_token(value)
        and 0 < len(value) <= MAX_PREFIX
        and sanitize_name(value) == value
    )


def _prefix_like(value: Any) -> str:
    """A usable prefix close to ``value``, for a violation's fix."""
    return sanitize_name(str(value))[:MAX_PREFIX] or "nightly-training"


def job_name_prefix_of(
    spec: TrainingSpec, given: str | None, scope: Construct, construct_id: str
) -> str:
    """The prefix of every job name: the prop, else the spec's ``base_job_name`` (the SDK's
    prefix of its job names) when it can be one, else the construct id plus a digest."""
    if given:
        return given
    if usable_prefix(spec.base_job_name):
        return spec.base_job_name
    return default_job_name_prefix(scope, construct_id)


def _job_name_violations(spec: TrainingSpec, prefix: str) -> list[Violation]:
    """A spec's ``job_name`` and ``base_job_name`` are honoured or refused, never dropped."""
    violations = []
    if spec.job_name is not None:
        violations.append(
            Violation(
                JOB_NAME_RULE,
                "job_name",
                "A job_name names one training job, but the state machine starts a job per "
                f"run, each named '{prefix}-...' (a fixed name would be refused from the "
                "second run on).",
                spec.job_name,
                "no job_name; base_job_name (or job_name_prefix) starts every job's name",
                "replace job_name with base_job_name",
            )
        )
    if spec.base_job_name is not None and not usable_prefix(spec.base_job_name):
        violations.append(
            Violation(
                BASE_JOB_NAME_RULE,
                "base_job_name",
                "The base_job_name starts every job name of the state machine, and that prefix "
                "scopes its IAM and event routing at synth.",
                spec.base_job_name,
                f"1 to {MAX_PREFIX} letters, digits and inner hyphens, not a deploy-time token",
                f"use e.g. {_prefix_like(spec.base_job_name)!r}",
            )
        )
    elif spec.base_job_name is not None and spec.base_job_name != prefix:
        violations.append(
            Violation(
                BASE_JOB_NAME_RULE,
                "base_job_name",
                "The spec's base_job_name is not the construct's job_name_prefix; both name "
                "the prefix of every job name.",
                spec.base_job_name,
                f"the job_name_prefix, {prefix!r}, or no base_job_name",
                "give the prefix once: job_name_prefix, or base_job_name (a spec file's is "
                "replaced by from_spec_file(..., base_job_name=...), e.g. one per stack)",
            )
        )
    return violations


def split_spec_fields(
    props: Mapping[str, Any], constructor: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments of ``from_spec_file``: ``TrainingSpec`` fields and construct props.

    A name the constructor takes is a prop, except where the value says it is the spec's: a
    role given as an ARN string, an ``output_path`` that is an S3 location (the task's own
    ``output_path`` is a JSONPath).
    """
    spec_fields = {f.name for f in dataclasses.fields(TrainingSpec)}
    parameters = set(inspect.signature(constructor).parameters)

    def is_spec(key: str, value: Any) -> bool:
        if key not in spec_fields:
            return False
        if key not in parameters:
            return True
        if key == "role":
            return isinstance(value, str)
        return key == "output_path" and isinstance(value, str) and not value.startswith("$")

    unknown = sorted(k for k in props if k not in spec_fields and k not in parameters)
    if unknown:
        known = sorted(spec_fields | parameters - {"self", "scope", "construct_id", "spec"})
        raise ValueError(
            f"from_spec_file takes no argument {unknown[0]!r}. Allowed: a TrainingSpec field or "
            f"a prop ({', '.join(known)}). Fix: "
            + (
                f"did you mean {meant!r}?"
                if (meant := did_you_mean(unknown[0], known))
                else "remove it"
            )
        )
    spec_values = {k: v for k, v in props.items() if is_spec(k, v)}
    others = {k: v for k, v in props.items() if k not in spec_values}
    return spec_values, others


def spec_from_file(
    path: str | os.PathLike[str], overrides: Mapping[str, Any], scope_path: str
) -> TrainingSpec:
    """A spec file with ``TrainingSpec`` fields given in Python merged over it."""
    reading = read_spec_file(path)
    if reading.spec is None or reading.violations:
        raise SpecValidationError(reading.violations, scope=scope_path)
    try:
        return dataclasses.replace(reading.spec, **overrides)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{scope_path}: {error}") from error


def _acknowledge_executions(
    acknowledgments: nag.Acknowledgments, machines: Sequence[ContainingStateMachine]
) -> None:
    acknowledgments.wildcards(
        "Execution names are chosen when executions start; the control role may only "
        "describe executions of the state machines that contain this task (to stop a "
        "job whose execution has ended).",
        resources=[m.executions for m in machines],
    )


def _retry(
    errors: list[str],
    *,
    interval: int,
    max_attempts: int,
    backoff_rate: float,
    max_delay: int | None = None,
    jitter: bool = False,
) -> dict[str, Any]:
    """A retrier as Step Functions reads it (and as aws-cdk-lib's ``add_retry`` renders it)."""
    retry: dict[str, Any] = {
        "ErrorEquals": errors,
        "IntervalSeconds": interval,
        "MaxAttempts": max_attempts,
        # A whole rate as an integer: the number JSON.stringify writes for it (2, not 2.0).
        "BackoffRate": int(backoff_rate) if float(backoff_rate).is_integer() else backoff_rate,
    }
    if max_delay is not None:
        retry["MaxDelaySeconds"] = max_delay
    if jitter:
        retry["JitterStrategy"] = "FULL"
    return retry


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
            _acknowledge_executions(acknowledgments, machines)
            acknowledgments.record()
            return []
        return [
            f"The training task {self._task.node.path} is in no state machine of stack "
            f"{self._task.runner.stack.stack_name}. Allowed: a task used by a state machine "
            "defined in the same stack as the task. Fix: chain the task into a state machine "
            "of that stack (its events and permissions are scoped to the stack)."
        ]


@jsii.implements(ec2.IConnectable)
class HeterogeneousTrainingTask(sfn.TaskStateBase):
    """A Step Functions task that runs one SageMaker training job to its end.

    The spec (``TrainingSpec`` or a spec file) is validated with every rule at construction; the
    first error lists every violation with this task's path. The task's output is
    DescribeTrainingJob's own fields (``TrainingJobName``, ``TrainingJobArn``,
    ``ModelArtifacts.S3ModelArtifacts``, ``AlgorithmSpecification.TrainingImage``,
    ``TrainingJobStatus``, ``SecondaryStatus``, ``ResourceConfig``, ``CreationTime``,
    ``TrainingStartTime``, ``TrainingEndTime``, ``TrainingTimeInSeconds``,
    ``BillableTimeInSeconds``) plus ``Attempt`` and ``Variant``. Failures carry the
    ``HeteroTraining.*`` error names of ``lifecycle.Errors``.
    """

    # The state machine a construct of this library renders the task into, as one JSON
    # document built in Python (see ``own_state_json``); None for a task users chain.
    _own_state_machine: ContainingStateMachine | None = None

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
        overrides: sfn.TaskInput | None = None,
        job_key: str | None = None,
        capacity_retry: CapacityRetry | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        acknowledgments: Mapping[str, str] | None = None,
        comment: str | None = None,
        state_name: str | None = None,
        query_language: sfn.QueryLanguage | None = None,
        input_path: str | None = None,
        output_path: str | None = None,
        result_path: str | None = None,
        result_selector: Mapping[str, Any] | None = None,
        assign: Mapping[str, Any] | None = None,
        outputs: Any = None,
    ) -> None:
        """
        :param spec: the job, with the SageMaker Python SDK's names (see ``TrainingSpec``).
        :param role: the SageMaker execution role; by default one is created with least
            privilege (a spec's ``role`` ARN is used when given).
        :param job_name_prefix: every job name starts with it; default: the spec's
            ``base_job_name``, else the id plus a digest.
            Prefixes may not overlap within an app (they scope IAM and event routing).
        :param volume_encryption_key: KMS key for the ML storage volumes (sets volume_kms_key).
        :param output_encryption_key: KMS key for the model artifacts (sets output_kms_key).
        :param include_runtime_helper: ship ``hetero_runtime`` (instance-group facts) in the code.
        :param completion_margin: time beyond max_run (or max_wait with spot) for startup and
            upload before the wait for completion times out; default 6 hours.
        :param overrides: the execution-time overrides (hyperparameters, channels,
            job_name_prefix, tags), e.g. ``sfn.TaskInput.from_json_path_at("$.training")`` or,
            with JSONata, ``sfn.TaskInput.from_text("{% $states.input.training %}")``; they are
            validated with the same rules before any job is created. Default: none.
        :param job_key: a path or expression whose value tells parallel entries of this state
            apart when they may start in the same millisecond (e.g. the item index of an inline
            Map, passed in through its ItemSelector). Default: none.
        :param capacity_retry: retry capacity failures (``CapacityRetry()`` for the defaults),
            each attempt on the next fallback of the instance groups. Default: none (the
            construct's own state machine retries by default).
        :param vpc: run the jobs in this VPC (the raw ``subnets`` / ``security_group_ids`` of
            the spec keep working instead).
        :param vpc_subnets: which of its subnets; default: the private ones.
        :param security_groups: the jobs' security groups; by default one is created that lets
            the instances of a job reach each other (distributed training needs it).
        :param acknowledgments: warning rules weighed for this job, rule id -> reason (added to
            the spec's own); recorded in the template's metadata. Errors cannot be acknowledged.
        """
        self._own_query_language = query_language
        self._rendered_fields = {
            "Comment": comment,
            "ResultPath": result_path,
            "Output": outputs,
        }
        timeout_seconds = self._completion_seconds(
            spec, completion_margin, query_language, child_path(scope, construct_id)
        )
        super().__init__(
            scope,
            construct_id,
            comment=comment,
            state_name=state_name,
            query_language=query_language,
            input_path=input_path,
            output_path=output_path,
            result_path=result_path,
            result_selector=result_selector,
            assign=assign,
            outputs=outputs,
            integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
        )
        self.path: str = child_path(scope, construct_id)
        remember_path(self, self.path)
        self.runner = TrainingRunner.of(scope)
        self.arns = self.runner.arns
        self.job_name_prefix = job_name_prefix_of(spec, job_name_prefix, scope, construct_id)
        self._check_prefix()
        self.marker = f'"jobNamePrefix":"{self.job_name_prefix}"'
        self.completion_timeout_seconds = timeout_seconds
        self._overrides = overrides
        self._job_key = job_key
        # Every acknowledgment of the task, recorded in one call at the end.
        self._acknowledgments = nag.Acknowledgments(self, self.runner.nag_ids)
        spec = self._with_keys(spec, volume_encryption_key, output_encryption_key)
        spec = self._with_network(spec, vpc, vpc_subnets, security_groups)
        if acknowledgments:
            spec = dataclasses.replace(
                spec, acknowledgments={**spec.acknowledgments, **acknowledgments}
            )
        role = role or self._spec_role(spec)
        self.code_location = self._code_location(spec, include_runtime_helper)
        self.code_asset = self.code_location.asset if self.code_location else None
        # The DLC account is kept apart: as a token it cannot be parsed back out of the URI.
        dlc_image, self._image_account = (None, None) if spec.image_uri else self._dlc_image(spec)
        deployment = Deployment(
            job_name=self.job_name_prefix,
            role_arn=role.role_arn if role is not None else _ROLE_ARN_STAND_IN,
            region=self.arns.region,
            submit_directory=self.code_location.url if self.code_location else None,
            dlc_image_uri=dlc_image,
        )
        self.spec = spec
        violations = [
            *self._region_violations(spec),
            *_job_name_violations(spec, self.job_name_prefix),
        ]
        result = plan(spec, deployment, is_token=is_token)
        # One root cause, one violation: a value the rules already refuse is not refused twice.
        refused = {v.path for v in result.violations}
        violations = [v for v in violations if v.path not in refused]
        if result.request is None or violations:
            raise SpecValidationError([*violations, *result.violations], scope=self.path)
        self.request: dict[str, Any] = result.request
        statements, pulls_from_ecr, s3_uris = self._execution_statements()
        # A role this task creates takes what every job needs from the stack's managed policy;
        # a role given to the task is the user's, and gets all of it inline.
        shared = None
        if role is None and pulls_from_ecr:
            shared = self.runner.every_training_job_policy
        else:
            statements += permissions.every_training_job(self.arns, ecr_login=pulls_from_ecr)
        self._acknowledge_execution_policy(statements, s3_uris)
        if role is None:
            role = self._execution_role(statements, shared)
            # The role's own ARN in place of the stand-in the request was planned with.
            assert self.request["RoleArn"] == _ROLE_ARN_STAND_IN
            self.request["RoleArn"] = role.role_arn
            deployment = dataclasses.replace(deployment, role_arn=self.request["RoleArn"])
        else:
            permissions.policy(self, "ExecutionPolicy", statements, role)
        self.role: iam.IRole = role
        self.deployment = deployment
        self.role_arn: str = deployment.role_arn  # type: ignore[assignment]
        self.control_role_arn = self._control_role()
        self.acknowledged = result.acknowledged
        if result.acknowledged:
            self._control_cfn_role.add_metadata(
                "hetero-constructs:acknowledged",
                [
                    {"rule": v.rule, "path": v.path, "reason": reason}
                    for v, reason in result.acknowledged
                ],
            )
        self.runner.register(self, self._own_state_machine)
        # The task's own retriers, rendered in Python before any the user adds.
        self._retries = [
            _retry(
                [*LAMBDA_ERRORS, lifecycle.Errors.THROTTLED],
                interval=2,
                max_attempts=6,
                backoff_rate=2,
                jitter=True,
            )
        ]
        self.capacity_retry = capacity_retry
        if capacity_retry is not None:
            interval, max_delay = capacity_retry.seconds
            self._retries.append(
                _retry(
                    list(lifecycle.Errors.CAPACITY_RETRYABLE),
                    interval=interval,
                    max_attempts=capacity_retry.max_attempts,
                    backoff_rate=capacity_retry.backoff_rate,
                    max_delay=max_delay,
                    jitter=capacity_retry.jitter,
                )
            )
        own = self._own_state_machine
        if own is not None:
            _acknowledge_executions(self._acknowledgments, [own])
        self._acknowledgments.record()
        if own is None:
            # Only the user's state machines are known after construction.
            self.node.add_validation(_InStateMachine(self))

    @property
    def longest_run_seconds(self) -> int | None:
        """How long an entry of the task may take with every capacity retry (None: a token)."""
        timeout = self.completion_timeout_seconds
        if not isinstance(timeout, int):
            return None
        retry = self.capacity_retry
        attempts = 1 + (retry.max_attempts if retry else 0)
        return attempts * timeout + sum(retry.delays_seconds() if retry else [])

    @classmethod
    def from_spec_file(
        cls, scope: Construct, construct_id: str, path: str | os.PathLike[str], **props: Any
    ) -> HeterogeneousTrainingTask:
        """The task for a spec file (JSON, or YAML with .yaml/.yml).

        Any ``TrainingSpec`` field given as a keyword (e.g. ``output_path=bucket_uri(...)``,
        ``subnets``) is merged over the file's; the other keywords are the task's props.
        """
        spec_values, task_props = split_spec_fields(props, cls.__init__)
        spec = spec_from_file(path, spec_values, f"{scope.node.path}/{construct_id}")
        return cls(scope, construct_id, spec=spec, **task_props)

    # -- construction ---------------------------------------------------------------------------

    @staticmethod
    def _completion_seconds(
        spec: TrainingSpec,
        margin: Duration | None,
        query_language: sfn.QueryLanguage | None,
        where: str,
    ) -> int | str:
        """The wait's timeout: the longest the job may take plus the margin.

        A deploy-time ``max_run`` keeps its margin through a JSONata expression; JSONPath has no
        arithmetic on the timeout, so there it is refused rather than silently losing the margin.
        """
        seconds = int(margin.to_seconds()) if margin else DEFAULT_COMPLETION_MARGIN_SECONDS
        longest: Any = spec.max_wait if spec.use_spot_instances and spec.max_wait else spec.max_run
        if not is_token(longest):
            return int(longest) + seconds
        if query_language != sfn.QueryLanguage.JSONATA:
            raise SpecValidationError(
                [
                    Violation(
                        TIMEOUT_TOKEN_RULE,
                        "max_wait" if spec.use_spot_instances and spec.max_wait else "max_run",
                        "The maximum runtime is a deploy-time value: a JSONPath task cannot add "
                        "the completion margin to it.",
                        "a CDK token",
                        "a number, or a token with query_language=sfn.QueryLanguage.JSONATA",
                        "pass query_language=sfn.QueryLanguage.JSONATA (the timeout becomes a "
                        "JSONata expression), or a number",
                    )
                ],
                scope=where,
            )
        return f"{{% {Token.as_string(longest)} + {seconds} %}}"

    def _check_prefix(self) -> None:
        prefix = self.job_name_prefix
        if not usable_prefix(prefix):
            raise ValueError(
                f"{self.path}: job_name_prefix {prefix!r} cannot start training job names. "
                f"Allowed: 1 to {MAX_PREFIX} letters, digits and inner hyphens, not a token "
                "(the prefix scopes IAM and event routing at synth). "
                f"Fix: e.g. {_prefix_like(prefix)!r}."
            )

    @staticmethod
    def _with_keys(
        spec: TrainingSpec, volume: kms.IKey | None, output: kms.IKey | None
    ) -> TrainingSpec:
        if volume is not None:
            spec = dataclasses.replace(spec, volume_kms_key=volume.key_arn)
        if output is not None:
            spec = dataclasses.replace(spec, output_kms_key=output.key_arn)
        return spec

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
        self._connections = ec2.Connections(security_groups=list(groups))
        return dataclasses.replace(
            spec,
            subnets=tuple(chosen.subnet_ids),
            security_group_ids=tuple(g.security_group_id for g in groups),
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

    def _region_violations(self, spec: TrainingSpec) -> list[Violation]:
        region = self.arns.region
        if spec.region is None or is_token(region) or spec.region == region:
            return []
        return [
            Violation(
                REGION_RULE,
                "region",
                "The spec names another region than its stack's.",
                spec.region,
                f"the stack's region, {region}",
                "remove region from the spec, or deploy the stack to that region",
            )
        ]

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

    def _dlc_image(self, spec: TrainingSpec) -> tuple[str | None, str | None]:
        """The region's Deep Learning Container and its account, from aws-cdk-lib's facts."""
        region = self.arns.region
        context = RuleContext(spec, Deployment(region=region), is_token)
        if spec.framework_version is None or spec.py_version is None:
            return None, None
        account: str | None
        if is_token(region):
            account = self.runner.stack.regional_fact(FactName.DLC_REPOSITORY_ACCOUNT)
            suffix = Aws.URL_SUFFIX
        else:
            fact_account, fact_suffix = _region_facts(region)
            account = fact_account or catalog.DLC_ACCOUNTS.get(region)
            suffix = fact_suffix or "amazonaws.com"
            if account is None:
                return None, None  # FW-REGION explains
        uri = (
            f"{account}.dkr.ecr.{region}.{suffix}/{image_repository(context)}:{image_tag(context)}"
        )
        return uri, account

    # -- permissions ------------------------------------------------------------------------------

    def _execution_role(
        self, statements: list[permissions.Statement], shared: iam.IManagedPolicy | None
    ) -> iam.Role:
        """SageMaker's role for this task's jobs, with SageMaker's confused-deputy conditions.

        Its own policy is inline: one resource per job instead of two.
        """
        document = permissions.document(statements)
        return iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal(
                permissions.SAGEMAKER,
                conditions={
                    "StringEquals": {"aws:SourceAccount": self.arns.account},
                    "ArnLike": {"aws:SourceArn": self.arns.training_jobs(self.job_name_prefix)},
                },
            ),
            description=f"SageMaker execution role of {self.path}",
            inline_policies={"Training": iam.PolicyDocument.from_json(document)},
            managed_policies=[shared] if shared is not None else None,
        )

    def _execution_statements(self) -> tuple[list[permissions.Statement], bool, list[str]]:
        """The channels, output, code, log streams, image, keys and VPC of the job.

        Also whether the image is pulled from ECR, and the S3 URIs read or written.
        """
        request, spec, arns = self.request, self.spec, self.arns
        reads = [
            c["DataSource"]["S3DataSource"]["S3Uri"]
            for c in request.get("InputDataConfig", [])
            if c["ChannelName"] != "code"
        ]
        writes = [request["OutputDataConfig"]["S3OutputPath"]]
        # Channel overrides may point only under what the role is granted to read.
        self.channel_prefixes = list(reads)
        if spec.checkpoint_s3_uri:
            writes.append(spec.checkpoint_s3_uri)
            reads.append(spec.checkpoint_s3_uri)  # spot jobs resume from their checkpoints
        image = request["AlgorithmSpecification"]["TrainingImage"]
        pull = permissions.image_pull(arns, image, self._image_account)
        statements = [
            *permissions.s3_read(arns, reads),
            *permissions.s3_write(arns, writes),
            *permissions.log_streams(arns, self.job_name_prefix),
            *pull,
        ]
        if spec.subnets:
            statements += permissions.vpc_interfaces(arns, spec.subnets, spec.security_group_ids)
        for key, is_volume in ((spec.volume_kms_key, True), (spec.output_kms_key, False)):
            if key and (is_token(key) or key.startswith("arn:")):
                statements.append(permissions.kms_use(key, volume=is_volume))
        if self.code_location is not None:
            code = self.code_location
            code_object = f"arn:{arns.partition}:s3:::{code.bucket}/{code.key}"
            statements.append(permissions.allow(["s3:GetObject"], [code_object]))
        return statements, bool(pull), [*reads, *writes]

    def _acknowledge_execution_policy(
        self, statements: list[permissions.Statement], s3_uris: list[str]
    ) -> None:
        acknowledgments = self._acknowledgments
        prefixes = [location.objects_arn(self.arns) for location in permissions.locations(s3_uris)]
        acknowledgments.wildcards(
            "Channels are S3 prefixes: the job reads every object under each channel prefix and "
            "writes its artifacts and checkpoints under {output}/{job name}/, whose keys are not "
            "known at synth. Nothing outside these prefixes is granted.",
            resources=sorted(set(prefixes)),
        )
        acknowledgments.wildcards(
            "SageMaker names log streams {job name}/algo-N-...; the grant covers this job "
            "prefix's streams in /aws/sagemaker/TrainingJobs only.",
            resources=[permissions.training_log_streams(self.arns, self.job_name_prefix)],
        )
        acknowledgments.wildcards(
            "Only for actions without resource-level permissions: ecr:GetAuthorizationToken, "
            "cloudwatch:PutMetricData (restricted to SageMaker's namespace by condition) and, "
            "for VPC jobs, the ec2:Describe* calls SageMaker makes.",
            resources=["*"] if any(s["Resource"] == "*" for s in statements) else [],
        )
        if self.spec.subnets:
            acknowledgments.wildcards(
                "SageMaker creates and deletes the job's network interfaces, whose ids are not "
                "known before the job starts.",
                resources=[permissions.network_interfaces(self.arns)],
            )

    def _control_role(self) -> str:
        """The role the shared Lambdas assume for this task's jobs (and nothing else); its ARN.

        Its policy names the state machines that contain the task. A construct's own state
        machine is known now and named without a reference: the policy is inline. A user's
        state machine exists only once the user has built it, and names the role in its
        definition: the policy is then rendered at synth, in a resource of its own that names
        both (inline, the role and the state machine would each wait for the other).
        """
        runner = self.runner
        own = self._own_state_machine is not None
        # L1 under the path (and so the logical id) an L2 role has: in-flight runs name it.
        holder = Construct(self, "ControlRole")
        role = iam.CfnRole(
            holder,
            "Resource",
            assume_role_policy_document={
                "Statement": [
                    {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"AWS": arn}}
                    for arn in runner.lambda_role_arns
                ],
                "Version": "2012-10-17",
            },
            description=f"Submits, follows and stops the training jobs of {self.path}",
            path=runner.control_role_path,
            policies=[{"policyName": _CONTROL_POLICY, "policyDocument": self._control_document()}]
            if own
            else None,
        )
        if not own:
            iam.CfnPolicy(
                self,
                "ControlPolicy",
                policy_name=_CONTROL_POLICY,
                roles=[role.ref],
                policy_document=at_synth(self._control_document),
            )
        self._acknowledgments.wildcards(
            f"Training job names are derived per attempt under the prefix "
            f"'{self.job_name_prefix}-'; the wildcard covers exactly those jobs (creation is "
            "further narrowed by condition keys to what the spec declares).",
            resources=[self.arns.training_jobs(self.job_name_prefix)],
        )
        self._control_cfn_role = role
        return role.attr_arn

    def _control_document(self) -> dict[str, Any]:
        return permissions.document(self.control_statements())

    def control_statements(self) -> list[permissions.Statement]:
        """What the control role may do: this prefix's jobs, the role, its state machines."""
        jobs = self.arns.training_jobs(self.job_name_prefix)
        own = self._own_state_machine
        machines = [own] if own is not None else self.runner.containing_state_machines(self)
        # A training plan's reserved capacity is used by naming the plan (SageMaker developer
        # guide, "IAM for SageMaker training plans": the plan user role).
        plan_arn = self.request["ResourceConfig"].get("TrainingPlanArn")
        statements = [
            permissions.allow(
                ["sagemaker:CreateTrainingJob"],
                [jobs, *([plan_arn] if plan_arn else [])],
                conditions.create_training_job(
                    self.request,
                    types=variants.instance_types(self.spec),
                    runner_id=self.runner.runner_id,
                ),
            ),
            permissions.allow(
                [
                    "sagemaker:DescribeTrainingJob",
                    "sagemaker:StopTrainingJob",
                    "sagemaker:AddTags",
                    "sagemaker:ListTags",
                ],
                [jobs],
            ),
            permissions.allow(
                ["iam:PassRole"],
                [self.role_arn],
                {"StringEquals": {"iam:PassedToService": permissions.SAGEMAKER}},
            ),
        ]
        if plan_arn:
            statements.append(permissions.allow(["sagemaker:DescribeTrainingPlan"], [plan_arn]))
        if machines:
            statements += [
                permissions.allow(
                    ["states:SendTaskSuccess", "states:SendTaskFailure"],
                    [m.arn for m in machines],
                ),
                # Whether the execution still runs: a job whose execution ended is stopped.
                permissions.allow(["states:DescribeExecution"], [m.executions for m in machines]),
            ]
        return statements

    # -- the state --------------------------------------------------------------------------------

    @property
    def _task_metrics(self) -> sfn.TaskMetricsConfig | None:
        return sfn.TaskMetricsConfig(
            metric_prefix_singular="LambdaFunction",
            metric_prefix_plural="LambdaFunctions",
            metric_dimensions={"LambdaFunctionArn": self.runner.submit_function_arn},
        )

    @property
    def _task_policies(self) -> list[iam.PolicyStatement] | None:
        return self.runner.invoke_statements

    def _spec_for_lambda(self) -> TrainingSpec:
        """The spec as the submit Lambda validates it: the code is the uploaded object."""
        if self.code_location is None or self.spec.source_dir is None:
            return self.spec
        return dataclasses.replace(self.spec, source_dir=self.code_location.url)

    @functools.cached_property
    def _static_payload(self) -> dict[str, Any]:
        deployment = {
            key: value
            for key, value in dataclasses.asdict(self.deployment).items()
            if value is not None and key != "job_name"
        }
        # The spec, not the request: the Lambda plans it again with the run's overrides, and
        # the request would double the definition's size (templates are limited to 1 MB).
        return {
            "spec": spec_to_dict(self._spec_for_lambda()),
            "deployment": deployment,
            "jobNamePrefix": self.job_name_prefix,
            "tokenTtlSeconds": _ttl(self.completion_timeout_seconds),
            "channelPrefixes": self.channel_prefixes,
            "controlRoleArn": self.control_role_arn,
            "runnerId": self.runner.runner_id,
        }

    def _payload(self, jsonata: bool) -> dict[str, Any]:
        payload = dict(self._static_payload)
        if jsonata:
            payload["context"] = {
                key: f"{{% $states.context.{path} %}}" for key, path in _CONTEXT.items()
            }
        else:
            payload["context"] = {f"{key}.$": f"$$.{path}" for key, path in _CONTEXT.items()}
        payload.update(self._input_fields(jsonata))
        return payload

    def _input_fields(self, jsonata: bool) -> dict[str, Any]:
        """The payload's ``input`` (the overrides) and ``jobKey``, as the language writes them."""
        dynamic: dict[str, Any] = {}
        if self._overrides is not None:
            dynamic["input"] = self._overrides.value
        if self._job_key is not None:
            dynamic["jobKey"] = self._job_key
        if jsonata or not dynamic:
            return dynamic
        return dict(sfn.FieldUtils.render_object(dynamic) or {})

    def _retry_catch(self, retries: Any, catches: Any) -> dict[str, Any]:
        """The task's own retriers first, then the user's (``States.ALL`` stays last)."""
        rendered: dict[str, Any] = {"Retry": [*self._retries, *(retries or [])]}
        if catches:
            rendered["Catch"] = catches
        return rendered

    def _task_fields(self, jsonata: bool) -> dict[str, Any]:
        """Resource and Parameters (JSONPath) or Arguments (JSONata): the submit Lambda call."""
        arguments = {
            "FunctionName": self.runner.submit_function_arn,
            "Payload": self._payload(jsonata),
        }
        return {
            "Resource": f"arn:{self.arns.partition}:states:::lambda:invoke.waitForTaskToken",
            "Arguments" if jsonata else "Parameters": arguments,
        }

    def to_state_json(
        self, top_level_query_language: sfn.QueryLanguage | None = None
    ) -> Mapping[Any, Any]:
        """The task state, in the query language in effect (its own, else the state machine's)."""
        if self._own_state_machine is not None:
            raise ValueError(
                f"{self.path} is the task of the state machine {self._own_state_machine.path}, "
                "and a state can be used in one state machine only. Fix: chain a "
                "HeterogeneousTrainingTask of your own, or start that state machine from yours "
                "with tasks.StepFunctionsStartExecution."
            )
        language = self._own_query_language or top_level_query_language
        jsonata = language == sfn.QueryLanguage.JSONATA
        if self._overrides is not None and not jsonata and _is_jsonata(self._overrides.value):
            raise ValueError(f"{self.path}: a JSONata override needs a JSONata task")
        retry_catch = self._render_retry_catch(top_level_query_language)
        state: dict[str, Any] = {
            **self._render_query_language(top_level_query_language),
            **self._render_next_end(),
            **self._retry_catch(retry_catch.get("Retry"), retry_catch.get("Catch")),
            "Type": "Task",
        }
        rendered: Mapping[str, Any] | None
        if self._rendered_fields["Comment"] is not None:
            state["Comment"] = self._rendered_fields["Comment"]
        state["TimeoutSeconds"] = self.completion_timeout_seconds
        rendered = self._render_input_output()
        state.update(rendered or {})
        result_path = self._rendered_fields["ResultPath"]
        if result_path is not None:
            state["ResultPath"] = None if result_path == sfn.JsonPath.DISCARD else result_path
        state.update(self._render_result_selector() or {})
        if self._rendered_fields["Output"] is not None:
            state["Output"] = self._rendered_fields["Output"]
        state.update(self._render_assign(top_level_query_language) or {})
        state.update(self._task_fields(jsonata))
        return state

    @functools.cached_property
    def string_tokens(self) -> frozenset[str]:
        """The tokens of the task's own state that hold strings: ARNs, the code's URL, ..."""
        values = [
            self.role_arn,
            self.control_role_arn,
            self.runner.submit_function_arn,
            self.arns.partition,
            self.arns.region,
            self.arns.account,
            self.code_location.url if self.code_location else "",
            self.deployment.dlc_image_uri or "",  # the region's DLC account and URL suffix
        ]
        return frozenset(STRING_TOKEN.findall(" ".join(values)))

    def own_state_json(self, *, next_state: str, catch_state: str) -> dict[str, Any]:
        """The state in its construct's own state machine, rendered without jsii.

        The construct's state machine has the task's query language at its top and sets no
        paths, selector or assignments on it: only the transitions differ from ``to_state_json``.
        """
        state: dict[str, Any] = {
            "Next": next_state,
            **self._retry_catch(None, [{"ErrorEquals": ["States.ALL"], "Next": catch_state}]),
            "Type": "Task",
        }
        if self._rendered_fields["Comment"] is not None:
            state["Comment"] = self._rendered_fields["Comment"]
        state["TimeoutSeconds"] = self.completion_timeout_seconds
        state.update(self._task_fields(self._own_query_language == sfn.QueryLanguage.JSONATA))
        return state


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
        *,
        own_state_machine: ContainingStateMachine,
        query_language: sfn.QueryLanguage,
        **props: Any,
    ) -> None:
        self._own_state_machine = own_state_machine
        super().__init__(scope, construct_id, query_language=query_language, **props)

    def _input_fields(self, jsonata: bool) -> dict[str, Any]:
        return {"input": "{% $states.input %}"} if jsonata else {"input.$": "$"}


def _ttl(timeout: int | str) -> int:
    """How long the run table keeps a job: its completion timeout and a day (28 days + 2)."""
    day = 24 * 3600
    return (timeout if isinstance(timeout, int) else 30 * day) + day


def _is_jsonata(value: Any) -> bool:
    return isinstance(value, str) and value.strip().startswith("{%")


__all__: Sequence[str] = [
    "HeterogeneousTrainingTask",
    "default_job_name_prefix",
    "job_name_prefix_of",
]
