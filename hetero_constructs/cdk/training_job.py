"""``HeterogeneousTrainingJob``: a validated SageMaker training job, run by a state machine."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk.region_info import FactName, RegionInfo
from constructs import Construct

from hetero_constructs.cdk import nag, permissions
from hetero_constructs.cdk.hygiene import depend_on_policy_only
from hetero_constructs.cdk.packaging import source_bundle
from hetero_constructs.cdk.runner import TrainingRunner
from hetero_constructs.cdk.tokens import is_token
from hetero_constructs.core import catalog
from hetero_constructs.core.context import Deployment, RuleContext
from hetero_constructs.core.naming import sanitize_name
from hetero_constructs.core.overrides import apply_overrides
from hetero_constructs.core.plan import plan
from hetero_constructs.core.request.image_uri import image_repository, image_tag
from hetero_constructs.core.spec import TrainingSpec
from hetero_constructs.core.spec_file import read_spec, read_spec_file, spec_to_dict
from hetero_constructs.core.violations import SpecValidationError, Violation

RUNTIME_HELPER = Path(__file__).resolve().parents[1] / "runtime"
RUNTIME_HELPER_PACKAGE = "hetero_runtime"
_MAX_PREFIX = 40
_LAMBDA_ERRORS = [
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]


_DEFAULT_MARGIN_SECONDS = 6 * 3600


@functools.cache
def _durations(seconds: int) -> Duration:
    """Durations are immutable values; one per process spares calls into jsii."""
    return Duration.seconds(seconds)


@functools.cache
def _execution_paths() -> dict[str, str]:
    """What every submit task passes besides the spec: input, execution and task token."""
    return {
        "input": sfn.JsonPath.entire_payload,
        "executionName": sfn.JsonPath.string_at("$$.Execution.Name"),
        "executionArn": sfn.JsonPath.string_at("$$.Execution.Id"),
        "taskToken": sfn.JsonPath.task_token,
    }


@functools.cache
def _region_facts(region: str) -> tuple[str | None, str | None]:
    """aws-cdk-lib's DLC account and domain suffix for a concrete region."""
    info = RegionInfo.get(region)
    return info.dlc_repository_account, info.domain_suffix


def default_job_name_prefix(scope: Construct, construct_id: str) -> str:
    """The construct id plus a digest of its path (which starts with the stack's name)."""
    digest = hashlib.sha256(f"{scope.node.path}/{construct_id}".encode()).hexdigest()[:8]
    readable = sanitize_name(construct_id)[: _MAX_PREFIX - 9].rstrip("-") or "job"
    return f"{readable}-{digest}".lower()


class HeterogeneousTrainingJob(Construct):
    """A SageMaker training job (heterogeneous or homogeneous), validated at synth time.

    Every rule of ``hetero_constructs.core`` runs when the construct is created; the first error
    lists every violation with this construct's path. CDK tokens are skipped, not guessed.

    The construct defines the job's execution role (unless ``role`` is given), packages
    ``source_dir`` as a deterministic ``sourcedir.tar.gz`` asset, resolves the region's Deep
    Learning Container, and a state machine (``state_machine``) whose executions run one training
    job each, to its end, through the stack's shared submit and events Lambdas.
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
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_YEAR,
        schedule: events.Schedule | None = None,
        schedule_input: Mapping[str, Any] | None = None,
        alarm_topic: sns.ITopic | None = None,
    ) -> None:
        """
        :param spec: the job, with the SageMaker Python SDK's names (see ``TrainingSpec``).
        :param role: the SageMaker execution role; by default one is created with least privilege.
        :param job_name_prefix: every job name starts with it; default: the id plus a digest.
        :param volume_encryption_key: KMS key for the ML storage volumes (sets volume_kms_key).
        :param output_encryption_key: KMS key for the model artifacts (sets output_kms_key).
        :param include_runtime_helper: ship ``hetero_runtime`` (instance-group facts) in the code.
        :param completion_margin: time beyond max_run (or max_wait with spot) for startup and
            upload before the wait for completion times out; default 6 hours.
        :param log_retention: retention of the state machine's log group.
        :param schedule: start executions on this schedule, with ``schedule_input`` as input.
        :param schedule_input: the execution input (overrides) of scheduled runs.
        :param alarm_topic: SNS topic for the failed, timed-out and aborted execution alarms.
        """
        super().__init__(scope, construct_id)
        self.path: str = self.node.path
        if schedule_input is not None and schedule is None:
            raise ValueError(
                f"{self.path}: schedule_input is given without a schedule. "
                "Fix: pass schedule=events.Schedule.rate(...) too."
            )
        self.runner = TrainingRunner.of(scope)
        self.arns = self.runner.arns
        self.job_name_prefix = job_name_prefix or default_job_name_prefix(scope, construct_id)
        self._check_prefix()
        spec = self._with_keys(spec, volume_encryption_key, output_encryption_key)
        self.code_asset = self._code_asset(spec, include_runtime_helper)
        self.role: iam.IRole = role or iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal(permissions.SAGEMAKER),
            description=f"SageMaker execution role of {self.path}",
        )
        # The DLC account is kept apart: as a token it cannot be parsed back out of the URI.
        dlc_image, self._image_account = (None, None) if spec.image_uri else self._dlc_image(spec)
        deployment = Deployment(
            job_name=self.job_name_prefix,
            role_arn=self.role.role_arn,
            region=self.arns.region,
            submit_directory=self.code_asset.s3_object_url if self.code_asset else None,
            dlc_image_uri=dlc_image,
        )
        self.spec = spec
        self.deployment = deployment
        result = plan(spec, deployment, is_token=is_token)
        if result.request is None:
            raise SpecValidationError(result.violations, scope=self.path)
        self.request: dict[str, Any] = result.request
        self._grant_execution_role()

        margin = completion_margin.to_seconds() if completion_margin else _DEFAULT_MARGIN_SECONDS
        longest = spec.max_wait if spec.use_spot_instances and spec.max_wait else spec.max_run
        self.completion_timeout_seconds = int(longest) + int(margin)
        self.completion_timeout = Duration.seconds(self.completion_timeout_seconds)
        self.state_machine = self._state_machine(log_retention)
        self.runner.register(self)
        if schedule is not None:
            self._schedule(schedule, schedule_input or {})
        self.alarms = self._alarms(alarm_topic)

    # -- construction helpers ------------------------------------------------------------------

    @classmethod
    def from_spec_file(
        cls, scope: Construct, construct_id: str, path: str | os.PathLike[str], **props: Any
    ) -> HeterogeneousTrainingJob:
        """The job described by a spec file (JSON, or YAML with .yaml/.yml)."""
        reading = read_spec_file(path)
        if reading.spec is None or reading.violations:
            raise SpecValidationError(reading.violations, scope=f"{scope.node.path}/{construct_id}")
        return cls(scope, construct_id, spec=reading.spec, **props)

    def _check_prefix(self) -> None:
        prefix = self.job_name_prefix
        if (
            is_token(prefix)
            or not (0 < len(prefix) <= _MAX_PREFIX)
            or sanitize_name(prefix) != prefix
        ):
            raise ValueError(
                f"{self.path}: job_name_prefix {prefix!r} cannot start training job names. "
                f"Allowed: 1 to {_MAX_PREFIX} letters, digits and inner hyphens, not a token "
                "(the prefix scopes IAM and event routing at synth). "
                f"Fix: e.g. {sanitize_name(prefix)[:_MAX_PREFIX] or 'nightly-training'!r}."
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

    def _code_asset(self, spec: TrainingSpec, include_helper: bool) -> s3_assets.Asset | None:
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
        return self.runner.code_asset(bundle)

    def _dlc_image(self, spec: TrainingSpec) -> tuple[str | None, str | None]:
        """The region's Deep Learning Container and its account, from aws-cdk-lib's facts."""
        region = self.arns.region
        context = RuleContext(spec, Deployment(region=region), is_token)
        if spec.framework_version is None or spec.py_version is None:
            return None, None
        stack = self.runner.stack
        account: str | None
        if is_token(region):
            account = stack.regional_fact(FactName.DLC_REPOSITORY_ACCOUNT)
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

    # -- permissions -----------------------------------------------------------------------------

    def _grant_execution_role(self) -> None:
        """One inline policy: the channels, output, code, logs, image, keys and VPC of the job."""
        request, spec, arns = self.request, self.spec, self.arns
        reads = [
            c["DataSource"]["S3DataSource"]["S3Uri"]
            for c in request.get("InputDataConfig", [])
            if c["ChannelName"] != "code"
        ]
        writes = [request["OutputDataConfig"]["S3OutputPath"]]
        if spec.checkpoint_s3_uri:
            writes.append(spec.checkpoint_s3_uri)
            reads.append(spec.checkpoint_s3_uri)  # spot jobs resume from their checkpoints
        image = request["AlgorithmSpecification"]["TrainingImage"]
        statements = [
            *permissions.s3_read(arns, reads),
            *permissions.s3_write(arns, writes),
            *permissions.logs_and_metrics(arns, self.job_name_prefix),
            *permissions.image_pull(arns, image, self._image_account),
        ]
        if spec.subnets:
            statements += permissions.vpc_interfaces(arns, spec.subnets, spec.security_group_ids)
        for key, is_volume in ((spec.volume_kms_key, True), (spec.output_kms_key, False)):
            if key and (is_token(key) or key.startswith("arn:")):
                statements.append(permissions.kms_use(key, volume=is_volume))
        if self.code_asset is not None:
            asset = self.code_asset
            code_object = f"arn:{arns.partition}:s3:::{asset.s3_bucket_name}/{asset.s3_object_key}"
            statements.append(permissions.allow(["s3:GetObject"], [code_object]))
        execution_policy = permissions.policy(self, "ExecutionPolicy", statements, self.role)
        self._acknowledge_execution_policy(execution_policy, reads, writes, statements)

    def _acknowledge_execution_policy(
        self,
        scope: Construct,
        reads: list[str],
        writes: list[str],
        statements: list[permissions.Statement],
    ) -> None:
        acknowledgments = nag.Acknowledgments(scope, self.runner.nag_ids)
        prefixes = [
            location.objects_arn(self.arns) for location in permissions.locations([*reads, *writes])
        ]
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
        acknowledgments.record()

    @functools.cached_property
    def submit_statements(self) -> list[permissions.Statement]:
        """What the submit Lambda may do for this job, and nothing wider than the spec.

        Creation is scoped to the job-name prefix and narrowed with the condition keys the
        service documents for CreateTrainingJob to what the spec declares.
        """
        jobs = self.arns.training_jobs(self.job_name_prefix)
        return [
            permissions.allow(["sagemaker:CreateTrainingJob"], [jobs], self._create_conditions()),
            permissions.allow(["sagemaker:DescribeTrainingJob", "sagemaker:AddTags"], [jobs]),
            permissions.allow(
                ["iam:PassRole"],
                [self.role.role_arn],
                {"StringEquals": {"iam:PassedToService": permissions.SAGEMAKER}},
            ),
            self._task_results_statement(),
        ]

    @functools.cached_property
    def notify_statements(self) -> list[permissions.Statement]:
        """What the events Lambda may do: report outcomes to this state machine, stop its jobs."""
        jobs = self.arns.training_jobs(self.job_name_prefix)
        return [
            permissions.allow(
                ["sagemaker:StopTrainingJob", "sagemaker:DescribeTrainingJob"], [jobs]
            ),
            self._task_results_statement(),
        ]

    def _task_results_statement(self) -> permissions.Statement:
        return permissions.allow(
            ["states:SendTaskSuccess", "states:SendTaskFailure"], [self.state_machine_arn]
        )

    def _create_conditions(self) -> dict[str, dict[str, Any]]:
        request = self.request
        resources = request["ResourceConfig"]
        types = sorted(
            {g["InstanceType"] for g in resources.get("InstanceGroups", [])}
            | ({resources["InstanceType"]} if "InstanceType" in resources else set())
        )
        conditions: dict[str, dict[str, Any]] = {
            "ForAllValues:StringEquals": {"sagemaker:InstanceTypes": types},
            "NumericLessThanEquals": {
                "sagemaker:MaxRuntimeInSeconds": request["StoppingCondition"]["MaxRuntimeInSeconds"]
            },
        }
        vpc = request.get("VpcConfig")
        if vpc:
            conditions["ForAllValues:StringEquals"].update(
                {
                    "sagemaker:VpcSubnets": vpc["Subnets"],
                    "sagemaker:VpcSecurityGroupIds": vpc["SecurityGroupIds"],
                }
            )
            conditions["Null"] = {"sagemaker:VpcSubnets": "false"}
        keys = {
            "sagemaker:VolumeKmsKey": resources.get("VolumeKmsKeyId"),
            "sagemaker:OutputKmsKey": request["OutputDataConfig"].get("KmsKeyId"),
        }
        arns = {name: value for name, value in keys.items() if value}
        if arns:
            conditions["ArnEquals"] = arns
        flags = {
            "sagemaker:NetworkIsolation": request.get("EnableNetworkIsolation"),
            "sagemaker:InterContainerTrafficEncryption": request.get(
                "EnableInterContainerTrafficEncryption"
            ),
        }
        required = {name: "true" for name, value in flags.items() if value}
        if required:
            conditions["Bool"] = required
        return conditions

    # -- the state machine -----------------------------------------------------------------------

    @property
    def state_machine_name(self) -> str:
        """Named after the prefix, so the Lambdas' policies need no reference to it."""
        return self.job_name_prefix

    @property
    def state_machine_arn(self) -> str:
        """Built from the name, so the Lambdas' policies need no reference to the resource."""
        return self.arns.state_machine(self.state_machine_name)

    def _state_machine(self, log_retention: logs.RetentionDays) -> sfn.StateMachine:
        ttl = self.completion_timeout_seconds + 24 * 3600
        submit = tasks.LambdaInvoke(
            self,
            "Run training job",
            lambda_function=self.runner.submit_function,
            integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
            payload=sfn.TaskInput.from_object(
                {
                    "request": self.request,
                    "spec": spec_to_dict(self._spec_for_lambda()),
                    "deployment": self._deployment_payload(),
                    "jobNamePrefix": self.job_name_prefix,
                    "tokenTtlSeconds": ttl,
                    **_execution_paths(),
                }
            ),
            task_timeout=sfn.Timeout.duration(self.completion_timeout),
            retry_on_service_exceptions=False,
            comment="Submits the job; waits for the events Lambda to report its end.",
        )
        submit.add_retry(
            errors=_LAMBDA_ERRORS,
            interval=_durations(2),
            backoff_rate=2,
            max_attempts=6,
            jitter_strategy=sfn.JitterType.FULL,
        )
        submit.add_retry(
            errors=["SageMakerThrottled"],
            interval=_durations(5),
            backoff_rate=2,
            max_attempts=8,
            jitter_strategy=sfn.JitterType.FULL,
        )
        failed = sfn.Fail(
            self,
            "Training failed",
            error_path="$.Error",
            cause_path="$.Cause",
            comment="Carries SageMaker's FailureReason, or the violations of the execution input.",
        )
        submit.add_catch(failed, errors=["States.ALL"])
        definition = submit.next(sfn.Succeed(self, "Training completed"))
        log_group = logs.LogGroup(
            self,
            "StateMachineLogs",
            retention=log_retention,
            removal_policy=RemovalPolicy.DESTROY,
            log_group_name=f"/aws/vendedlogs/states/{self.state_machine_name}",
        )
        state_machine = sfn.StateMachine(
            self,
            "Resource",
            state_machine_name=self.state_machine_name,
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            timeout=Duration.seconds(self.completion_timeout_seconds + 3600),
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=True
            ),
        )
        depend_on_policy_only(state_machine, state_machine.role)
        nag.Acknowledgments(state_machine.role, self.runner.nag_ids).wildcards(
            "Step Functions X-Ray tracing and log delivery to CloudWatch Logs support only '*'.",
            resources=["*"],
        ).wildcards(
            "CDK's LambdaInvoke task grants invoking the submit function's versions and aliases.",
            resources=[f"{self.runner.submit_function.function_arn}:*"],
        ).record()
        return state_machine

    def _spec_for_lambda(self) -> TrainingSpec:
        """The spec as the submit Lambda validates it: the code is the uploaded object."""
        if self.code_asset is None or self.spec.source_dir is None:
            return self.spec
        return dataclasses.replace(self.spec, source_dir=self.code_asset.s3_object_url)

    def _deployment_payload(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self.deployment)
        fields.pop("job_name")
        return {key: value for key, value in fields.items() if value is not None}

    def _schedule(self, schedule: events.Schedule, schedule_input: Mapping[str, Any]) -> None:
        self._check_overrides(schedule_input, "schedule_input")
        events.Rule(
            self,
            "Schedule",
            schedule=schedule,
            description=f"Starts {self.path} on a schedule",
            targets=[
                targets.SfnStateMachine(
                    self.state_machine,
                    input=events.RuleTargetInput.from_object(dict(schedule_input)),
                )
            ],
        )

    def _check_overrides(self, overrides: Mapping[str, Any], what: str) -> None:
        """Validate an execution input at synth, as the submit Lambda will at run time."""
        overridden = apply_overrides(spec_to_dict(self.spec), overrides)
        violations: list[Violation] = list(overridden.violations)
        if not violations:
            reading = read_spec(overridden.spec)
            violations += reading.violations
            if reading.spec is not None:
                violations += plan(reading.spec, self.deployment, is_token=is_token).violations
        if violations:
            raise SpecValidationError(violations, scope=f"{self.path} {what}")

    def _alarms(self, topic: sns.ITopic | None) -> list[cloudwatch.CfnAlarm]:
        """Alarms on failed, timed-out and aborted executions (5-minute sums, missing = OK)."""
        actions = [topic.topic_arn] if topic is not None else None
        return [
            cloudwatch.CfnAlarm(
                self,
                f"{metric}Alarm",
                namespace="AWS/States",
                metric_name=metric,
                dimensions=[{"name": "StateMachineArn", "value": self.state_machine_arn}],
                statistic="Sum",
                period=300,
                evaluation_periods=1,
                threshold=1,
                comparison_operator="GreaterThanOrEqualToThreshold",
                treat_missing_data="notBreaching",
                alarm_description=f"A training run of {self.path} ended {outcome}",
                alarm_actions=actions,
            )
            for metric, outcome in (
                ("ExecutionsFailed", "failed"),
                ("ExecutionsTimedOut", "timed out"),
                ("ExecutionsAborted", "aborted"),
            )
        ]

    # -- public helpers ----------------------------------------------------------------------

    def grant_start_execution(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` start training runs (executions of the state machine)."""
        return self.state_machine.grant_start_execution(grantee)

    @property
    def instance_types(self) -> Sequence[str]:
        resources = self.request["ResourceConfig"]
        groups = resources.get("InstanceGroups")
        return [g["InstanceType"] for g in groups] if groups else [resources["InstanceType"]]
