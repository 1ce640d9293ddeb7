"""What all training jobs of a stack share: the submit and events Lambdas and the token table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import botocore
import jsii
from aws_cdk import Duration, IStableAnyProducer, Lazy, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from hetero_constructs.cdk import nag, permissions
from hetero_constructs.cdk.hygiene import depend_on_policy_only
from hetero_constructs.cdk.packaging import staged_directory
from hetero_constructs.core import lifecycle
from hetero_constructs.handlers import lambda_source

if TYPE_CHECKING:
    from hetero_constructs.cdk.training_job import HeterogeneousTrainingJob

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


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
# Finding the stack's runner costs calls into jsii; jobs under one scope share the answer.
_RUNNERS: dict[int, tuple[Construct, TrainingRunner]] = {}


def lambda_package() -> Path:
    """The handlers, the core they validate with, and the SageMaker model the core reads.

    The botocore model file is the one this synth validated against; ``AWS_DATA_PATH`` makes the
    Lambda's botocore load it instead of whatever version the runtime ships.
    """
    model_dir = Path(botocore.__file__).parent / "data" / "sagemaker"
    versions = sorted(p for p in model_dir.iterdir() if p.is_dir())
    model = next(versions[-1].glob("service-2.json*"))
    sources = {
        **{path.name: path for path in sorted(lambda_source().glob("*.py"))},
        "hetero_constructs/__init__.py": PACKAGE_ROOT / "__init__.py",
        "hetero_constructs/core": PACKAGE_ROOT / "core",
        f"{_DATA_PATH}/sagemaker/{versions[-1].name}/{model.name}": model,
    }
    return staged_directory(sources, "lambda")


@jsii.implements(IStableAnyProducer)
class _Produce:
    def __init__(self, produce: Callable[[], Any]) -> None:
        self._produce = produce

    def produce(self) -> Any:
        return self._produce()


def _at_synth(produce: Callable[[], Any]) -> Any:
    """A value computed when the template is rendered, after every job has registered."""
    return Lazy.any(_Produce(produce))


class TrainingRunner(Construct):
    """One per stack: the submit and events Lambdas, the task-token table, the event rules.

    Jobs ``register``; the Lambdas' job policies and the event rules' filters are rendered at
    synth from every registered job, so a stack of N jobs has two policies and two rules, not 2N.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.stack = stack
        self.arns = permissions.Arns.of(stack)
        self.nag_ids = nag.NagIds(stack, [self.arns.partition, self.arns.region, self.arns.account])
        self.table = dynamodb.Table(
            self,
            "TaskTokens",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute="expires_at",
            removal_policy=RemovalPolicy.DESTROY,
        )
        # A __pycache__ would change the asset hash from one synth to the next.
        code = lambda_.Code.from_asset(
            str(lambda_package()), exclude=["**/__pycache__", "**/*.pyc"]
        )
        self.submit_function = self._function("Submit", "submit.handler", code)
        self.events_function = self._function("Events", "events.handler", code)
        for function in (self.submit_function, self.events_function):
            self.table.grant_read_write_data(function)
            assert function.role is not None
            depend_on_policy_only(function, function.role)
        self._jobs: list[HeterogeneousTrainingJob] = []
        self._code_assets: dict[str, s3_assets.Asset] = {}
        self._submit_policy = self._job_policy(
            self.submit_function, "SubmitJobs", lambda job: job.submit_statements
        )
        self._events_policy = self._job_policy(
            self.events_function, "EventsJobs", lambda job: job.notify_statements
        )
        self._job_rule, self._execution_rule = self._rules()
        self._filter_events_by_job()

    def _function(self, name: str, handler: str, code: lambda_.Code) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{name}Logs",
            retention=logs.RetentionDays.THREE_MONTHS,
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"hetero-constructs {name.lower()} Lambda",
        )
        log_group.grant_write(role)
        return lambda_.Function(
            self,
            f"{name}Function",
            runtime=RUNTIME,
            handler=handler,
            code=code,
            role=role,
            log_group=log_group,
            timeout=Duration.seconds(60),
            memory_size=256,
            environment={
                "TOKEN_TABLE": self.table.table_name,
                "AWS_DATA_PATH": f"/var/task/{_DATA_PATH}",
            },
        )

    def _job_policy(
        self,
        function: lambda_.Function,
        construct_id: str,
        statements: Callable[[HeterogeneousTrainingJob], list[permissions.Statement]],
    ) -> iam.CfnPolicy:
        """The function's permissions on every registered job, rendered at synth."""
        assert function.role is not None
        return iam.CfnPolicy(
            self,
            construct_id,
            policy_name=f"{construct_id}Policy",
            roles=[function.role.role_name],
            policy_document=_at_synth(
                lambda: {
                    "Version": "2012-10-17",
                    "Statement": [s for job in self._jobs for s in statements(job)],
                }
            ),
        )

    def _rules(self) -> tuple[events.CfnRule, events.CfnRule]:
        """Job ends (by prefix) and execution ends (by state machine) reach the events Lambda."""
        target = targets.LambdaFunction(
            self.events_function, retry_attempts=8, max_event_age=Duration.hours(24)
        )

        def rule(
            construct_id: str,
            description: str,
            source: str,
            detail_type: str,
            detail: dict[str, Any],
        ) -> events.CfnRule:
            pattern = events.EventPattern(source=[source], detail_type=[detail_type], detail=detail)
            created = events.Rule(
                self, construct_id, description=description, event_pattern=pattern, targets=[target]
            )
            cfn = created.node.default_child
            assert isinstance(cfn, events.CfnRule)
            return cfn

        return (
            rule(
                "JobStateChange",
                "Ends the waiting task of a training run when its job ends",
                lifecycle.JOB_EVENT_SOURCE,
                lifecycle.JOB_EVENT_TYPE,
                {"TrainingJobStatus": list(lifecycle.TERMINAL_JOB_STATUSES)},
            ),
            rule(
                "ExecutionEnd",
                "Stops the training job of an aborted, timed-out or failed run",
                lifecycle.EXECUTION_EVENT_SOURCE,
                lifecycle.EXECUTION_EVENT_TYPE,
                {"status": list(lifecycle.STOPPING_EXECUTION_STATUSES)},
            ),
        )

    def _filter_events_by_job(self) -> None:
        """Only this stack's jobs and state machines reach the events Lambda."""
        self._job_rule.add_property_override(
            "EventPattern.detail.TrainingJobName",
            _at_synth(lambda: [{"prefix": f"{j.job_name_prefix}-"} for j in self._jobs]),
        )
        self._execution_rule.add_property_override(
            "EventPattern.detail.stateMachineArn",
            _at_synth(lambda: [j.state_machine_arn for j in self._jobs]),
        )

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

    def code_asset(self, bundle: Path) -> s3_assets.Asset:
        """The asset of a code bundle; jobs that ship the same bytes share one asset."""
        asset_id = f"Code{bundle.parent.name[:12]}"
        existing = self._code_assets.get(asset_id)
        if existing is None:
            existing = self._code_assets[asset_id] = s3_assets.Asset(
                self, asset_id, path=str(bundle)
            )
        return existing

    def register(self, job: HeterogeneousTrainingJob) -> None:
        """Let the Lambdas act on the job's prefix; prefixes must not shadow each other."""
        prefix = job.job_name_prefix
        for other in self._jobs:
            known = other.job_name_prefix
            if f"{prefix}-".startswith(f"{known}-") or f"{known}-".startswith(f"{prefix}-"):
                raise ValueError(
                    f"{job.node.path}: job name prefix '{prefix}' overlaps '{known}' of "
                    f"{other.node.path}; job names, IAM scoping and event routing would mix the "
                    "two jobs. Allowed: prefixes where neither is the other plus '-...'. "
                    "Fix: give one job another job_name_prefix."
                )
        self._jobs.append(job)
        reason = (
            f"Training job names are derived per execution under the prefix '{prefix}-'; the "
            "wildcard covers exactly those jobs (creation is further narrowed by condition keys "
            "to what the spec declares)."
        )
        # One scope for both job policies: the finding and its reason are the same.
        nag.Acknowledgments(self, self.nag_ids).wildcards(
            reason, resources=[self.arns.training_jobs(prefix)]
        ).record()


__all__ = ["RUNTIME", "TrainingRunner", "lambda_package"]
