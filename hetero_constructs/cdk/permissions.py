"""Least-privilege statements for the SageMaker execution role, derived from the request."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

SAGEMAKER = "sagemaker.amazonaws.com"
TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"
TRAINING_METRICS_NAMESPACE = "/aws/sagemaker/TrainingJobs"
_ECR_IMAGE = re.compile(
    r"^(?P<account>[^.]+)\.dkr\.ecr\.(?P<region>[^.]+)\.(?P<suffix>[^/]+)/(?P<repo>[^:@]+)"
)


@dataclass(frozen=True)
class S3Location:
    """``s3://bucket/prefix`` split into its bucket and key prefix (tokens allowed)."""

    bucket: str
    prefix: str

    @staticmethod
    def parse(uri: str) -> S3Location | None:
        if not uri.startswith("s3://"):
            return None
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        return S3Location(bucket, prefix)

    def bucket_arn(self, scope: Construct) -> str:
        return f"arn:{Stack.of(scope).partition}:s3:::{self.bucket}"

    def objects_arn(self, scope: Construct) -> str:
        return f"{self.bucket_arn(scope)}/{self.prefix}*"


def bucket_uri(bucket_name: str, prefix: str = "") -> str:
    """``s3://{bucket}/{prefix}`` for a channel, the output or checkpoints; tokens allowed."""
    return f"s3://{bucket_name}/{prefix.lstrip('/')}"


def s3_read(scope: Construct, uris: Sequence[str]) -> Iterator[iam.PolicyStatement]:
    """Read objects under each prefix, and list the bucket only under that prefix."""
    for location in filter(None, map(S3Location.parse, uris)):
        yield iam.PolicyStatement(actions=["s3:GetObject"], resources=[location.objects_arn(scope)])
        yield _list(scope, location)


def s3_write(scope: Construct, uris: Sequence[str]) -> Iterator[iam.PolicyStatement]:
    for location in filter(None, map(S3Location.parse, uris)):
        yield iam.PolicyStatement(
            actions=["s3:PutObject", "s3:AbortMultipartUpload"],
            resources=[location.objects_arn(scope)],
        )


def _list(scope: Construct, location: S3Location) -> iam.PolicyStatement:
    conditions = {"StringLike": {"s3:prefix": [f"{location.prefix}*"]}} if location.prefix else None
    return iam.PolicyStatement(
        actions=["s3:ListBucket"], resources=[location.bucket_arn(scope)], conditions=conditions
    )


def logs_and_metrics(scope: Construct, job_name_prefix: str) -> list[iam.PolicyStatement]:
    """Training logs of this prefix's jobs only, and metrics in SageMaker's namespace only."""
    group = Stack.of(scope).format_arn(
        service="logs",
        resource="log-group",
        resource_name=TRAINING_LOG_GROUP,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    return [
        iam.PolicyStatement(
            actions=["logs:CreateLogGroup", "logs:DescribeLogStreams"], resources=[group]
        ),
        iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[f"{group}:log-stream:{job_name_prefix}-*"],
        ),
        # PutMetricData has no resource-level permissions; the namespace condition scopes it.
        iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": TRAINING_METRICS_NAMESPACE}},
        ),
    ]


def image_pull(
    scope: Construct, image_uri: str, repository_account: str | None
) -> list[iam.PolicyStatement]:
    """Pull the training image from its ECR repository (the DLC account's, or the user's)."""
    stack = Stack.of(scope)
    match = _ECR_IMAGE.match(image_uri)
    if match is None:
        return []
    repository = stack.format_arn(
        service="ecr",
        account=repository_account or match["account"],
        region=match["region"],
        resource="repository",
        resource_name=match["repo"],
    )
    return [
        iam.PolicyStatement(
            actions=[
                "ecr:BatchCheckLayerAvailability",
                "ecr:GetDownloadUrlForLayer",
                "ecr:BatchGetImage",
            ],
            resources=[repository],
        ),
        # GetAuthorizationToken has no resource-level permissions.
        iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]),
    ]


def vpc_interfaces(
    scope: Construct, subnets: Sequence[str], groups: Sequence[str]
) -> list[iam.PolicyStatement]:
    """Network interfaces in the job's subnets and security groups (VPC jobs only)."""
    stack = Stack.of(scope)

    def ec2(resource: str, name: str) -> str:
        return stack.format_arn(service="ec2", resource=resource, resource_name=name)

    interfaces = ec2("network-interface", "*")
    return [
        iam.PolicyStatement(
            actions=["ec2:CreateNetworkInterface"],
            resources=[
                interfaces,
                *(ec2("subnet", s) for s in subnets),
                *(ec2("security-group", g) for g in groups),
            ],
        ),
        iam.PolicyStatement(
            actions=[
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
            ],
            resources=[interfaces],
        ),
        # Describe calls have no resource-level permissions.
        iam.PolicyStatement(
            actions=[
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeVpcs",
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeSubnets",
                "ec2:DescribeSecurityGroups",
            ],
            resources=["*"],
        ),
    ]


def kms_use(key_arn: str, *, volume: bool) -> iam.PolicyStatement:
    """Encrypt with a customer key: EBS volumes need grants, S3 output needs data keys."""
    actions = ["kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"]
    actions += ["kms:CreateGrant"] if volume else ["kms:Encrypt"]
    return iam.PolicyStatement(actions=actions, resources=[key_arn])
