"""What all training jobs of a stack share: the submit and events Lambdas and the token table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import botocore
from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from hetero_constructs.cdk import nag
from hetero_constructs.cdk.hygiene import depend_on_policy_only
from hetero_constructs.cdk.packaging import staged_directory
from hetero_constructs.core import service_model

if TYPE_CHECKING:
    from hetero_constructs.cdk.training_job import HeterogeneousTrainingJob

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
LAMBDA_SOURCE = PACKAGE_ROOT.parent / "lambda"
RUNTIME = lambda_.Runtime.PYTHON_3_14
_ID = "HeteroTrainingRunner"
_DATA_PATH = "botocore_data"


def lambda_package() -> Path:
    """The handlers, the core they validate with, and the SageMaker model the core reads.

    The botocore model file is the one this synth validated against; ``AWS_DATA_PATH`` makes the
    Lambda's botocore load it instead of whatever version the runtime ships.
    """
    model_dir = Path(botocore.__file__).parent / "data" / "sagemaker"
    versions = sorted(p for p in model_dir.iterdir() if p.is_dir())
    model = next(versions[-1].glob("service-2.json*"))
    sources = {
        **{path.name: path for path in sorted(LAMBDA_SOURCE.glob("*.py"))},
        "hetero_constructs/__init__.py": PACKAGE_ROOT / "__init__.py",
        "hetero_constructs/core": PACKAGE_ROOT / "core",
        f"{_DATA_PATH}/sagemaker/{versions[-1].name}/{model.name}": model,
    }
    return staged_directory(sources, "lambda")


class TrainingRunner(Construct):
    """One per stack: the submit Lambda, the events Lambda and the task-token table.

    Jobs call ``register`` so that both Lambdas may act on exactly their job-name prefixes.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
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
        self._prefixes: dict[str, str] = {}

    def _function(self, name: str, handler: str, code: lambda_.Code) -> lambda_.Function:
        log_group = logs.LogGroup(
            self, f"{name}Logs", retention=logs.RetentionDays.THREE_MONTHS,
            removal_policy=RemovalPolicy.DESTROY,
        )  # fmt: skip
        role = iam.Role(
            self, f"{name}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"hetero-constructs {name.lower()} Lambda",
        )  # fmt: skip
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

    @staticmethod
    def of(scope: Construct) -> TrainingRunner:
        """The stack's runner, created on first use."""
        stack = Stack.of(scope)
        existing = stack.node.try_find_child(_ID)
        return existing if isinstance(existing, TrainingRunner) else TrainingRunner(stack, _ID)

    def register(self, job: HeterogeneousTrainingJob) -> None:
        """Let the Lambdas act on the job's prefix; prefixes must not shadow each other."""
        prefix = job.job_name_prefix
        for other, path in self._prefixes.items():
            if f"{prefix}-".startswith(f"{other}-") or f"{other}-".startswith(f"{prefix}-"):
                raise ValueError(
                    f"{job.node.path}: job name prefix '{prefix}' overlaps '{other}' of {path}; "
                    "job names, IAM scoping and event routing would mix the two jobs. "
                    "Allowed: prefixes where neither is the other plus '-...'. "
                    "Fix: give one job another job_name_prefix."
                )
        self._prefixes[prefix] = job.node.path
        job.grant_submit(self.submit_function)
        job.grant_notify(self.events_function)
        for function in (self.submit_function, self.events_function):
            assert function.role is not None
            nag.acknowledge_wildcards(
                function.role,
                f"Training job names are derived per execution under the prefix '{prefix}-'; "
                "the wildcard covers exactly those jobs (creation is further narrowed by "
                "condition keys to what the spec declares).",
                resources=[training_job_arn(self, prefix)],
            )


def training_job_arn(scope: Construct, prefix: str) -> str:
    """ARN pattern of every training job a job construct may create."""
    return Stack.of(scope).format_arn(
        service="sagemaker", resource="training-job", resource_name=f"{prefix}-*"
    )


__all__ = ["RUNTIME", "TrainingRunner", "lambda_package", "service_model", "training_job_arn"]
