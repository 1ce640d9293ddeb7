"""The props of the training constructs, each declared once, with its default and its doc.

``HeterogeneousTrainingProps`` holds what the task and the job share (the spec, the execution
role, keys, network, capacity retries, ...); ``HeterogeneousTrainingTaskProps`` adds the state's
own fields (paths, selectors, the run's overrides) and ``HeterogeneousTrainingJobProps`` what the
job's own state machine takes (logs, schedule, alarm topic). They are aws-cdk-lib's ``*Props``
structs in Python: the constructors take their fields as keywords, as aws-cdk-lib's Python
constructors take theirs (jsii flattens a struct into keywords), through ``keyword_props``,
which derives the keyword signature from the dataclass. Type checkers and editors check the
keywords against it, and nothing is written twice.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, Self, TypeVar, cast

from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from hetero_constructs.constructs.paths import child_path
from hetero_constructs.constructs.retries import DEFAULT_CAPACITY_RETRY, CapacityRetry
from hetero_constructs.constructs.task_spec import spec_from_file
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import did_you_mean


@dataclasses.dataclass(frozen=True, kw_only=True)
class HeterogeneousTrainingProps:
    """What ``HeterogeneousTrainingTask`` and ``HeterogeneousTrainingJob`` both take."""

    spec: TrainingSpec
    """The job, with the SageMaker Python SDK's names (see ``TrainingSpec``); validated with
    every rule when the construct is created."""

    role: iam.IRole | None = None
    """The SageMaker execution role. Default: the spec's ``role`` ARN (imported), else a role
    created with least privilege for what the spec declares."""

    job_name_prefix: str | None = None
    """Every job name starts with it. Default: the spec's ``base_job_name``, else the id plus a
    digest. Prefixes may not overlap within an app (they scope IAM and event routing)."""

    volume_encryption_key: kms.IKey | None = None
    """KMS key for the ML storage volumes (sets the spec's ``volume_kms_key``). Default: the
    spec's ``volume_kms_key``, else SageMaker's default (an AWS managed key)."""

    output_encryption_key: kms.IKey | None = None
    """KMS key for the model artifacts (sets the spec's ``output_kms_key``). Default: the
    spec's ``output_kms_key``, else SageMaker's default (the account's AWS managed key
    for S3)."""

    include_runtime_helper: bool = True
    """Ship ``hetero_runtime`` (the instance-group facts, ``TrainingEnvironment``) in the code.
    Default: ``True``."""

    builtin_metrics: bool = True
    """Add the metric definitions of the lines ``MetricsReporter`` writes (samples per second
    per instance group, the trainers' data-wait fraction) after the spec's own; the dashboard
    shows them. ``False`` leaves the spec's definitions as they are. Default: ``True``."""

    completion_margin: Duration | None = None
    """Time beyond ``max_run`` (or ``max_wait`` with spot) for startup and upload before the wait
    for the job's end times out. Default: 6 hours."""

    capacity_retry: CapacityRetry | None = DEFAULT_CAPACITY_RETRY
    """Retries of a run that got no capacity (``HeteroTraining.CapacityError``) or hit an account
    quota (``HeteroTraining.ResourceLimitExceeded``), each attempt a new job on the next fallback
    of the instance groups; never a training failure. ``None`` turns them off. Default:
    ``CapacityRetry()``, 3 retries 5 minutes apart, doubling, at most an hour, with jitter: a
    failed attempt bills no instance time, and the run goes on without anyone watching."""

    vpc: ec2.IVpc | None = None
    """Run the jobs in this VPC (instead of the spec's raw ``subnets`` and
    ``security_group_ids``). Default: the spec's ``subnets``, else no VPC."""

    vpc_subnets: ec2.SubnetSelection | None = None
    """Which subnets of ``vpc``. Default: the private ones."""

    security_groups: Sequence[ec2.ISecurityGroup] | None = None
    """The jobs' security groups. Default: one created that lets the instances of a job reach
    each other (distributed training needs it)."""

    acknowledgments: Mapping[str, str] | None = None
    """Warning rules weighed for this job, rule id -> reason (added to the spec's own); recorded
    in the template's metadata. Errors cannot be acknowledged. Default: only the spec's own."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class HeterogeneousTrainingTaskProps(HeterogeneousTrainingProps):
    """The props of ``HeterogeneousTrainingTask``: the shared ones and the state's own.

    The state's fields are those of aws-cdk-lib's tasks (``TaskStateBaseProps``).
    """

    overrides: sfn.TaskInput | None = None
    """The execution-time overrides (hyperparameters, channels, job_name_prefix, tags), e.g.
    ``sfn.TaskInput.from_json_path_at("$.training")`` or, with JSONata,
    ``sfn.TaskInput.from_text("{% $states.input.training %}")``; validated with the same rules
    before any job is created. Default: none."""

    job_key: str | None = None
    """A path or expression whose value goes into the job names, e.g. to keep names stable
    across runs. Not needed to tell a Map's iterations apart: entries with the same context get
    a job each without it (docs/lifecycle.md, lanes). Default: none."""

    comment: str | None = None
    """The state's comment. Default: none."""

    state_name: str | None = None
    """The state's name in the definition. Default: the construct's id."""

    query_language: sfn.QueryLanguage | None = None
    """JSONPath or JSONata for this state. Default: the state machine's."""

    input_path: str | None = None
    """JSONPath: the part of the state's input it reads. Default: ``$``."""

    output_path: str | None = None
    """JSONPath: the part of the state's output passed on (a JSONPath, not the spec's S3
    ``output_path``). Default: ``$``."""

    result_path: str | None = None
    """JSONPath: where the task's output goes in the state's input. Default: ``$`` (replaces
    it)."""

    result_selector: Mapping[str, Any] | None = None
    """JSONPath: the fields of the task's output to keep, as a new object. Default: all of
    them."""

    assign: Mapping[str, Any] | None = None
    """Workflow variables to assign. Default: none."""

    outputs: Any = None
    """JSONata: the state's output. Default: the task's output."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class HeterogeneousTrainingJobProps(HeterogeneousTrainingProps):
    """The props of ``HeterogeneousTrainingJob``: the shared ones and its state machine's."""

    log_retention: logs.RetentionDays | None = None
    """With ``log_encryption_key``: the retention of this job's own log group. Default: the
    runner's."""

    log_encryption_key: kms.IKey | None = None
    """Give the state machine a log group of its own, encrypted with this key. Default: the
    stack's training state machines share the runner's log group."""

    include_execution_data: bool = False
    """Log execution inputs and outputs too. They carry the overrides and task tokens; on, the
    log group holds them. Default: ``False``."""

    schedule: events.Schedule | None = None
    """Start executions on this schedule, with ``schedule_input`` as their input. Default: no
    schedule (executions start when you start them)."""

    schedule_input: Mapping[str, Any] | None = None
    """The execution input (the overrides) of scheduled runs; checked at synth. Default: ``{}``
    (no overrides)."""

    alarm_topic: sns.ITopic | None = None
    """The SNS topic of the alarm on failed, timed-out and aborted executions. Default: none
    (the alarm notifies no one; it still shows in CloudWatch)."""


class FromSpecFile:
    """``from_spec_file``, the static factory of the training constructs."""

    @classmethod
    def from_spec_file(
        cls,
        scope: Construct,
        construct_id: str,
        path: str | os.PathLike[str],
        *,
        spec_overrides: Mapping[str, Any] | None = None,
        **props: Any,
    ) -> Self:
        """The construct for a spec file (JSON, or YAML with .yaml/.yml).

        :param spec_overrides: ``TrainingSpec`` fields set over the file's, e.g. values from
            the stack: ``{"output_path": bucket_uri(bucket, "runs/"), "max_run": 7200}``.
        :param props: the construct's other props, as keywords (all of its props but ``spec``).
        """
        where = child_path(scope.node.path, construct_id)
        spec = spec_from_file(path, spec_overrides, where)
        return cast(Callable[..., Self], cls)(scope, construct_id, spec=spec, **props)


def shared_props(props: HeterogeneousTrainingProps) -> dict[str, Any]:
    """The fields of ``props`` that every training construct takes, by name."""
    return {
        field.name: getattr(props, field.name)
        for field in dataclasses.fields(HeterogeneousTrainingProps)
    }


_Props = TypeVar("_Props", bound=HeterogeneousTrainingProps)
_Self = TypeVar("_Self")
_Fields = ParamSpec("_Fields")


def keyword_props(
    props_type: Callable[_Fields, _Props],
) -> Callable[
    [Callable[[_Self, Construct, str, _Props], None]],
    Callable[Concatenate[_Self, Construct, str, _Fields], None],
]:
    """``__init__(self, scope, id, props)`` called as ``Cls(scope, id, **fields of props)``.

    The decorated constructor's keywords are the fields of ``props_type`` for type checkers (a
    ParamSpec); at run time an unknown keyword is refused with the names allowed.
    """
    names = sorted(field.name for field in dataclasses.fields(cast(Any, props_type)))
    spec_fields = {field.name for field in dataclasses.fields(TrainingSpec)}

    def decorate(
        init: Callable[[_Self, Construct, str, _Props], None],
    ) -> Callable[Concatenate[_Self, Construct, str, _Fields], None]:
        @functools.wraps(init)
        def construct(
            self: _Self,
            scope: Construct,
            construct_id: str,
            /,
            *args: _Fields.args,
            **fields: _Fields.kwargs,
        ) -> None:
            unknown = sorted(set(fields) - set(names))
            if args or unknown:
                raise TypeError(
                    _unknown_props(type(self).__name__, args, unknown, names, spec_fields)
                )
            init(self, scope, construct_id, props_type(*args, **fields))

        # What help() and editors that read signatures at run time show: the props' fields.
        own = list(inspect.signature(init).parameters.values())[:3]
        construct.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [*own, *inspect.signature(props_type).parameters.values()]
        )
        return construct

    return decorate


def _unknown_props(
    construct: str,
    positional: tuple[Any, ...],
    unknown: list[str],
    names: list[str],
    spec_fields: set[str],
) -> str:
    if positional:
        return (
            f"{construct}(scope, id, ...) takes its props as keywords, not positional values. "
            f"Allowed: {', '.join(names)}. Fix: name them, e.g. spec=..."
        )
    name = unknown[0]
    meant = None if name in spec_fields else did_you_mean(name, names)
    spec_field = name if name in spec_fields else did_you_mean(name, spec_fields)
    if meant is None and spec_field is not None:
        fix = (
            f"'{spec_field}' is a TrainingSpec field: set it in the spec, or with "
            f"from_spec_file(..., spec_overrides={{'{spec_field}': ...}})"
        )
    else:
        fix = f"did you mean '{meant}'?" if meant else "remove it"
    return f"{construct} has no prop '{name}'. Allowed: {', '.join(names)}. Fix: {fix}"


__all__ = [
    "FromSpecFile",
    "HeterogeneousTrainingJobProps",
    "HeterogeneousTrainingProps",
    "HeterogeneousTrainingTaskProps",
    "keyword_props",
    "shared_props",
]
