"""Least-privilege policies, written as IAM JSON from the request.

Statements are plain dicts turned into one policy document per principal and job: a single
construct instead of one per statement keeps synth fast and the template easy to read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hetero_constructs.spec.s3_uri import S3Uri, key_patterns

Statement = dict[str, Any]

SAGEMAKER = "sagemaker.amazonaws.com"
TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"
TRAINING_METRICS_NAMESPACE = "/aws/sagemaker/TrainingJobs"
_ECR_IMAGE = re.compile(
    r"^(?P<account>[^.]+)\.dkr\.ecr\.(?P<region>[^.]+)\.(?P<suffix>[^/]+)/(?P<repo>[^:@]+)"
)


def allow(actions: Sequence[str], resources: Sequence[str], conditions: Any = None) -> Statement:
    statement: Statement = {
        "Effect": "Allow",
        "Action": list(actions) if len(actions) > 1 else actions[0],
        "Resource": list(resources) if len(resources) > 1 else resources[0],
    }
    if conditions:
        statement["Condition"] = conditions
    return statement


def document(statements: Iterable[Statement]) -> dict[str, Any]:
    """A policy document of the statements, those that differ only by resource merged."""
    return {"Version": "2012-10-17", "Statement": merged(statements)}


def merged(statements: Iterable[Statement]) -> list[Statement]:
    """One statement per (effect, actions, conditions), its resources the union, in order.

    Exactly the same grant (a statement's resources are alternatives), in fewer statements:
    IAM policy size, and aws-cdk-lib's template validation, grow with each statement.
    """
    by_grant: dict[str, Statement] = {}
    for index, statement in enumerate(statements):
        if statement.keys() - _MERGEABLE_KEYS or "Resource" not in statement:
            by_grant[f"unmerged {index}"] = statement  # a Sid, NotResource, ...: kept as is
            continue
        actions = statement["Action"]
        key = repr(
            (
                statement["Effect"],
                sorted(_as_list(actions)),
                statement.get("Condition"),
            )
        )
        kept = by_grant.get(key)
        if kept is None:
            by_grant[key] = dict(statement)
            continue
        resources = _as_list(kept["Resource"])
        resources += [r for r in _as_list(statement["Resource"]) if r not in resources]
        kept["Resource"] = resources if len(resources) > 1 else resources[0]
    return list(by_grant.values())


_MERGEABLE_KEYS = frozenset({"Effect", "Action", "Condition", "Resource"})


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def policy(
    scope: Construct, construct_id: str, statements: Iterable[Statement], role: iam.IRole
) -> iam.Policy:
    """One inline policy with the statements, attached to the role."""
    return iam.Policy(
        scope,
        construct_id,
        document=iam.PolicyDocument.from_json(document(statements)),
        roles=[role],
    )


@dataclass(frozen=True)
class Arns:
    """ARN parts of one stack, read once (each read is a call into the jsii runtime)."""

    partition: str
    region: str
    account: str

    @staticmethod
    def of(scope: Construct) -> Arns:
        stack = Stack.of(scope)
        return Arns(stack.partition, stack.region, stack.account)

    def arn(
        self,
        service: str,
        resource: str,
        *,
        region: str | None = None,
        account: str | None = None,
        regional: bool = True,
    ) -> str:
        where = f"{region or self.region}:{account or self.account}" if regional else ":"
        return f"arn:{self.partition}:{service}:{where}:{resource}"

    def training_jobs(self, prefix: str) -> str:
        """Every training job a job construct may create: ``{prefix}-*``."""
        return self.arn("sagemaker", f"training-job/{prefix}-*")

    def state_machine(self, name: str) -> str:
        return self.arn("states", f"stateMachine:{name}")

    def log_group(self, name: str) -> str:
        return self.arn("logs", f"log-group:{name}")


@dataclass(frozen=True)
class S3Location:
    """``s3://bucket/prefix`` split into its bucket and key prefix (tokens allowed).

    A prefix is granted at a path boundary (``spec.s3_uri.key_patterns``): ``s3://b/train``
    grants the object ``train`` and ``train/*``, never ``train*``, which would also cover the
    sibling ``train-nightly/``.
    """

    bucket: str
    prefix: str

    @staticmethod
    def parse(uri: str) -> S3Location | None:
        location = S3Uri.parse(uri)
        return S3Location(location.bucket, location.key) if location else None

    def bucket_arn(self, arns: Arns) -> str:
        return f"arn:{arns.partition}:s3:::{self.bucket}"

    def objects_arn(self, arns: Arns) -> str:
        """The wildcard resource of the grant: everything below the prefix's boundary."""
        return f"{self.bucket_arn(arns)}/{key_patterns(self.prefix)[-1]}"

    def object_arns(self, arns: Arns) -> list[str]:
        """Every object resource of the grant (the prefix object itself when it has no slash)."""
        return [f"{self.bucket_arn(arns)}/{pattern}" for pattern in key_patterns(self.prefix)]

    def list_condition(self) -> dict[str, Any] | None:
        """ListBucket only under the prefix, with the same boundary (none for a whole bucket)."""
        if not self.prefix:
            return None
        return {"StringLike": {"s3:prefix": key_patterns(self.prefix)}}


def bucket_uri(bucket: s3.IBucket | str, prefix: str = "") -> str:
    """``s3://{bucket}/{prefix}`` for a channel, the output or checkpoints.

    ``bucket`` is an ``s3.IBucket`` (its name may be a token, resolved at deploy) or a name.
    The execution role is granted exactly this prefix.
    """
    name = bucket if isinstance(bucket, str) else bucket.bucket_name
    return f"s3://{name}/{prefix.lstrip('/')}"


def locations(uris: Iterable[str]) -> list[S3Location]:
    return [location for location in map(S3Location.parse, uris) if location is not None]


def s3_read(arns: Arns, uris: Sequence[str]) -> list[Statement]:
    """Read objects under each prefix, and list each bucket only under that prefix."""
    statements = []
    for location in locations(uris):
        statements.append(allow(["s3:GetObject"], location.object_arns(arns)))
        statements.append(
            allow(["s3:ListBucket"], [location.bucket_arn(arns)], location.list_condition())
        )
    return statements


def s3_write(arns: Arns, uris: Sequence[str]) -> list[Statement]:
    return [
        allow(["s3:PutObject", "s3:AbortMultipartUpload"], location.object_arns(arns))
        for location in locations(uris)
    ]


def training_log_streams(arns: Arns, job_name_prefix: str) -> str:
    return f"{arns.log_group(TRAINING_LOG_GROUP)}:log-stream:{job_name_prefix}-*"


def log_streams(arns: Arns, job_name_prefix: str) -> list[Statement]:
    """Write the training logs of this prefix's jobs only."""
    return [
        allow(
            ["logs:CreateLogStream", "logs:PutLogEvents"],
            [training_log_streams(arns, job_name_prefix)],
        )
    ]


def every_training_job(arns: Arns, *, ecr_login: bool = True) -> list[Statement]:
    """What every training job's role needs whatever the job: the same for all of a stack.

    SageMaker's log group (not its streams), metrics in SageMaker's namespace only, and an ECR
    login token (``ecr_login``: for images in ECR). The constructs put these in one managed
    policy per stack: the same statements in every job's inline policy would grow every role
    and the template's IAM (which aws-cdk-lib's template validation reads statement by
    statement) for nothing.
    """
    group = arns.log_group(TRAINING_LOG_GROUP)
    statements = [
        allow(["logs:CreateLogGroup", "logs:DescribeLogStreams"], [group]),
        # PutMetricData has no resource-level permissions; the namespace condition scopes it.
        allow(
            ["cloudwatch:PutMetricData"],
            ["*"],
            {"StringEquals": {"cloudwatch:namespace": TRAINING_METRICS_NAMESPACE}},
        ),
    ]
    if ecr_login:
        # GetAuthorizationToken has no resource-level permissions; pulling an image also
        # needs the repository's own statement (``image_pull``).
        statements.append(allow(["ecr:GetAuthorizationToken"], ["*"]))
    return statements


def image_pull(arns: Arns, image_uri: str, repository_account: str | None) -> list[Statement]:
    """Pull the training image from its ECR repository (the DLC account's, or the user's)."""
    match = _ECR_IMAGE.match(image_uri)
    if match is None:
        return []
    repository = arns.arn(
        "ecr",
        f"repository/{match['repo']}",
        region=match["region"],
        account=repository_account or match["account"],
    )
    return [
        allow(
            ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"],
            [repository],
        )
    ]


def network_interfaces(arns: Arns) -> str:
    return arns.arn("ec2", "network-interface/*")


def vpc_interfaces(arns: Arns, subnets: Sequence[str], groups: Sequence[str]) -> list[Statement]:
    """Network interfaces in the job's subnets and security groups (VPC jobs only)."""
    interfaces = network_interfaces(arns)
    return [
        allow(
            ["ec2:CreateNetworkInterface"],
            [
                interfaces,
                *(arns.arn("ec2", f"subnet/{s}") for s in subnets),
                *(arns.arn("ec2", f"security-group/{g}") for g in groups),
            ],
        ),
        allow(
            [
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
            ],
            [interfaces],
        ),
        # Describe calls have no resource-level permissions.
        allow(
            [
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeVpcs",
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeSubnets",
                "ec2:DescribeSecurityGroups",
            ],
            ["*"],
        ),
    ]


def allow_log_encryption(key: Any, arns: Arns) -> None:
    """Let CloudWatch Logs use ``key`` for this account's log groups in this region.

    Without this key-policy statement a log group encrypted with the key cannot be created.
    Imported keys (``kms.Key.from_key_arn``) cannot be changed: their policy must allow it.
    """
    key.add_to_resource_policy(
        iam.PolicyStatement(
            actions=[
                "kms:Encrypt*",
                "kms:Decrypt*",
                "kms:ReEncrypt*",
                "kms:GenerateDataKey*",
                "kms:Describe*",
            ],
            principals=[iam.ServicePrincipal(f"logs.{arns.region}.amazonaws.com")],
            resources=["*"],
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": arns.log_group("*")}},
        )
    )


def kms_use(key_arn: str, *, volume: bool) -> Statement:
    """Encrypt with a customer key: EBS volumes need grants, S3 output needs data keys."""
    actions = ["kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"]
    actions += ["kms:CreateGrant"] if volume else ["kms:Encrypt"]
    return allow(actions, [key_arn])


__all__ = [
    "SAGEMAKER",
    "TRAINING_LOG_GROUP",
    "TRAINING_METRICS_NAMESPACE",
    "Arns",
    "S3Location",
    "Statement",
    "allow",
    "allow_log_encryption",
    "bucket_uri",
    "document",
    "every_training_job",
    "image_pull",
    "kms_use",
    "locations",
    "log_streams",
    "merged",
    "network_interfaces",
    "policy",
    "s3_read",
    "s3_write",
    "training_log_streams",
    "vpc_interfaces",
]
