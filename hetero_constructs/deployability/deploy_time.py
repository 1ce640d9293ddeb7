"""What CloudFormation resolves at deploy time, and how long it can be (no CDK import).

Pseudo parameters (``PartitionFacts``: the longest region, partition and DNS suffix in
botocore's partition data), the values a caller knows (``KnownValues``), and what ``Ref`` and
``Fn::GetAtt`` return for each modelled resource type (``RESOURCE_KINDS``). ``worst_case``
sizes a template's values with them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import botocore.loaders

ACCOUNT_ID_LENGTH = 12


STACK_NAME_MAX = 128  # CloudFormation quotas: "Stack name: 128 characters"


UNKNOWN_LENGTH = 256


# CloudFormation's generated physical names end in a random suffix of 12 or 13 characters.
GENERATED_SUFFIX = 13


@dataclass(frozen=True)
class PartitionFacts:
    """The longest region, partition and DNS suffix AWS has, from botocore's partition data."""

    longest_region: str
    longest_partition: str
    longest_url_suffix: str
    partitions: tuple[tuple[str, str, re.Pattern[str]], ...]  # (id, dnsSuffix, region regex)

    def partition_of(self, region: str) -> tuple[str, str] | None:
        """The partition id and DNS suffix of a region, if botocore knows it."""
        for partition_id, suffix, pattern in self.partitions:
            if pattern.fullmatch(region):
                return partition_id, suffix
        return None


@functools.cache
def botocore_loader() -> botocore.loaders.Loader:
    """botocore's data files (a loader reads them without the cost of a session)."""
    return botocore.loaders.create_loader()


@functools.cache
def partition_facts() -> PartitionFacts:
    data = botocore_loader().load_data("partitions")
    regions: list[str] = []
    partitions = []
    for partition in data["partitions"]:
        outputs = partition["outputs"]
        partitions.append(
            (partition["id"], outputs["dnsSuffix"], re.compile(partition["regionRegex"]))
        )
        regions.extend(name for name in partition["regions"] if not name.endswith("-global"))
    return PartitionFacts(
        longest_region=max(regions, key=len),
        longest_partition=max((p[0] for p in partitions), key=len),
        longest_url_suffix=max((p[1] for p in partitions), key=len),
        partitions=tuple(partitions),
    )


@dataclass(frozen=True)
class KnownValues:
    """Deploy-time values the caller knows; each one left ``None`` is sized worst-case."""

    account: str | None = None
    region: str | None = None
    partition: str | None = None
    url_suffix: str | None = None
    stack_name: str | None = None

    def completed(self) -> KnownValues:
        """Partition and DNS suffix filled in from the region, when botocore knows it."""
        if self.region is None or (self.partition and self.url_suffix):
            return self
        found = partition_facts().partition_of(self.region)
        if found is None:
            return self
        partition, suffix = found
        return replace(
            self, partition=self.partition or partition, url_suffix=self.url_suffix or suffix
        )


@dataclass(frozen=True)
class ResourceKind:
    """What ``Ref`` and ``Fn::GetAtt`` return for one resource type.

    Templates use ``{partition}``, ``{region}``, ``{account}``, ``{url_suffix}``, ``{path}``,
    ``{name}`` (the resource's name or id) and ``{arn}``.
    """

    name_max: int
    arn: str
    name_property: str | None = None
    ref: str = "{name}"
    attributes: Mapping[str, str] = field(default_factory=dict)
    generated: bool = True  # False: an id of fixed size, not derived from the stack's name


def _regional(service: str, resource: str) -> str:
    return f"arn:{{partition}}:{service}:{{region}}:{{account}}:{resource}"


RESOURCE_KINDS: dict[str, ResourceKind] = {
    "AWS::IAM::Role": ResourceKind(
        64,
        "arn:{partition}:iam::{account}:role{path}{name}",
        "RoleName",
        attributes={"RoleId": "AROA" + "X" * 17},
    ),
    "AWS::IAM::ManagedPolicy": ResourceKind(
        128,
        "arn:{partition}:iam::{account}:policy{path}{name}",
        "ManagedPolicyName",
        ref="{arn}",
        attributes={"PolicyArn": "{arn}"},
    ),
    "AWS::IAM::Policy": ResourceKind(128, "", "PolicyName"),
    "AWS::IAM::InstanceProfile": ResourceKind(
        128, "arn:{partition}:iam::{account}:instance-profile{path}{name}", "InstanceProfileName"
    ),
    "AWS::Lambda::Function": ResourceKind(
        64, _regional("lambda", "function:{name}"), "FunctionName"
    ),
    "AWS::StepFunctions::StateMachine": ResourceKind(
        80,
        _regional("states", "stateMachine:{name}"),
        "StateMachineName",
        ref="{arn}",
        attributes={"Name": "{name}"},
    ),
    "AWS::Logs::LogGroup": ResourceKind(
        512, _regional("logs", "log-group:{name}:*"), "LogGroupName"
    ),
    "AWS::DynamoDB::Table": ResourceKind(
        255,
        _regional("dynamodb", "table/{name}"),
        "TableName",
        attributes={"StreamArn": "{arn}/stream/" + "X" * 23},
    ),
    "AWS::S3::Bucket": ResourceKind(
        63,
        "arn:{partition}:s3:::{name}",
        "BucketName",
        attributes={
            "DomainName": "{name}.s3.{url_suffix}",
            "RegionalDomainName": "{name}.s3.{region}.{url_suffix}",
        },
    ),
    "AWS::SNS::Topic": ResourceKind(
        256,
        _regional("sns", "{name}"),
        "TopicName",
        ref="{arn}",
        attributes={"TopicArn": "{arn}", "TopicName": "{name}"},
    ),
    "AWS::SQS::Queue": ResourceKind(
        80,
        _regional("sqs", "{name}"),
        "QueueName",
        ref="https://sqs.{region}.{url_suffix}/{account}/{name}",
        attributes={
            "QueueUrl": "https://sqs.{region}.{url_suffix}/{account}/{name}",
            "QueueName": "{name}",
        },
    ),
    "AWS::KMS::Key": ResourceKind(
        36, _regional("kms", "key/{name}"), attributes={"KeyId": "{name}"}, generated=False
    ),
    "AWS::Events::Rule": ResourceKind(64, _regional("events", "rule/{name}"), "Name"),
    "AWS::CloudWatch::Alarm": ResourceKind(
        255, _regional("cloudwatch", "alarm:{name}"), "AlarmName"
    ),
    "AWS::ECR::Repository": ResourceKind(
        256,
        _regional("ecr", "repository/{name}"),
        "RepositoryName",
        attributes={"RepositoryUri": "{account}.dkr.ecr.{region}.{url_suffix}/{name}"},
    ),
    "AWS::SecretsManager::Secret": ResourceKind(
        512, _regional("secretsmanager", "secret:{name}-XXXXXX"), "Name", ref="{arn}"
    ),
    "AWS::SSM::Parameter": ResourceKind(2048, "", "Name"),
    "AWS::EC2::SecurityGroup": ResourceKind(
        20, "", attributes={"GroupId": "{name}", "VpcId": "v" * 21}, generated=False
    ),
    "AWS::EC2::Subnet": ResourceKind(24, "", attributes={"SubnetId": "{name}"}, generated=False),
    "AWS::EC2::VPC": ResourceKind(21, "", attributes={"VpcId": "{name}"}, generated=False),
}


__all__ = [
    "ACCOUNT_ID_LENGTH",
    "GENERATED_SUFFIX",
    "RESOURCE_KINDS",
    "STACK_NAME_MAX",
    "UNKNOWN_LENGTH",
    "KnownValues",
    "PartitionFacts",
    "ResourceKind",
    "botocore_loader",
    "partition_facts",
]
