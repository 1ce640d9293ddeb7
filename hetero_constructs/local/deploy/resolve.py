"""CloudFormation semantics for a local deployment: physical ids, Ref, Fn::GetAtt, intrinsics.

Every resource gets the physical id CloudFormation would give it, in the shape its type has:
security groups ``sg-...``, subnets ``subnet-...``, VPCs ``vpc-...``, bucket names, queue URLs,
topic ARNs, role names and ARNs, function names and ARNs, state-machine ARNs. Names come from
the resource's own name property when set, else from its logical id (deterministic: a run can
be repeated). ``Ref`` and ``Fn::GetAtt`` answer what CloudFormation documents for the type;
``Fn::If`` (with the template's conditions, ``Fn::Equals``, ``Fn::Not``, ``Fn::And``,
``Fn::Or``), ``Fn::GetAZs`` and the pseudo parameters resolve to literals, and the other
functions as every resolver resolves them (``deployability.intrinsics``). Once a resource exists
in moto, ``record`` makes its ids the ones moto answered.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetero_constructs.deployability.intrinsics import NO_VALUE, Intrinsics

DEFAULT_REGION = "us-west-2"
#: moto's account (its default credentials map to it).
DEFAULT_ACCOUNT = "123456789012"


@dataclass
class Physical:
    """What a resource resolves to: its ``Ref`` value and its ``Fn::GetAtt`` attributes."""

    ref: str
    attributes: dict[str, Any] = field(default_factory=dict)


def hex_id(seed: str, length: int = 17) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def bounded_name(base: str, limit: int, *, lowercase: bool = False) -> str:
    """``base`` within ``limit`` characters (a digest keeps long names distinct)."""
    name = re.sub(r"[^a-z0-9-]", "-", base.lower()) if lowercase else base
    if len(name) <= limit:
        return name
    digest = hex_id(base, 8)
    return f"{name[: limit - 9]}-{digest}"


def _manifest_environment(template_path: Path | None) -> str | None:
    """The environment (``aws://ACCOUNT/REGION``) the cdk.out manifest gives the stack whose
    template is ``template_path``; None without a manifest that names it."""
    if template_path is None:
        return None
    manifest = template_path.parent / "manifest.json"
    if not manifest.is_file():
        return None
    try:
        artifacts = json.loads(manifest.read_text()).get("artifacts", {})
    except ValueError:
        return None
    for artifact in artifacts.values():
        if (artifact.get("properties") or {}).get("templateFile") == template_path.name:
            return str(artifact.get("environment"))
    return None


def detect_account(template: dict[str, Any], template_path: Path | None) -> str | None:
    """The account a stack was synthesized for (``env=cdk.Environment(account=...)``): the
    cdk.out manifest's environment, else the account literal ARNs of its own services name
    most often; None for an environment-agnostic stack."""
    environment = _manifest_environment(template_path)
    if environment is not None:
        found = re.fullmatch(r"aws://(\d{12})/.*", environment)
        return found.group(1) if found else None
    text = json.dumps(template)
    arns = Counter(
        re.findall(
            r"arn:aws[a-z-]*:(?:states|lambda|sqs|sns|events|dynamodb|iam)::?[a-z0-9-]*:(\d{12}):",
            text,
        )
    )
    return str(arns.most_common(1)[0][0]) if arns else None


def detect_region(template: dict[str, Any], template_path: Path | None) -> str:
    """``--region`` aside: the cdk.out manifest's environment, else the region literal ARNs in
    the template name most often, else us-west-2."""
    environment = _manifest_environment(template_path)
    if environment is not None and environment.startswith("aws://"):
        region = environment.rsplit("/", 1)[-1]
        if region and not region.startswith("unknown"):
            return region
    text = json.dumps(template)
    found = Counter(re.findall(r":([a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-\d):", text))
    if found:
        return str(found.most_common(1)[0][0])
    return DEFAULT_REGION


class Resolver(Intrinsics):
    """Resolves a template's intrinsic functions for one local deployment."""

    def __init__(
        self,
        template: dict[str, Any],
        *,
        region: str,
        account: str = DEFAULT_ACCOUNT,
        stack_name: str = "LocalStack",
    ) -> None:
        super().__init__(template)
        self.functions.update(
            {
                "Fn::Equals": self._equals,
                "Fn::Not": lambda value: not self._truth(value[0]),
                "Fn::And": lambda value: all(self._truth(item) for item in value),
                "Fn::Or": lambda value: any(self._truth(item) for item in value),
                "Condition": self.condition,
                "Fn::ImportValue": self._import_value,
            }
        )
        self.region = region
        self.account = account
        self.stack_name = stack_name
        self.partition = (
            "aws-cn"
            if region.startswith("cn-")
            else ("aws-us-gov" if region.startswith("us-gov-") else "aws")
        )
        self._physical: dict[str, Physical] = {}
        self._conditions: dict[str, bool] = {}
        self.unresolved: list[str] = []  # what could not be known locally (notes)

    # -- physical ids -------------------------------------------------------------------

    def record(self, logical_id: str, ref: str | None = None, **attributes: Any) -> None:
        """The ids moto gave the resource replace the computed ones."""
        physical = self.physical(logical_id)
        if ref is not None:
            physical.ref = ref
        physical.attributes.update(attributes)

    def physical(self, logical_id: str) -> Physical:
        if logical_id not in self._physical:
            self._physical[logical_id] = self._compute(logical_id)
        return self._physical[logical_id]

    def name_property(self, logical_id: str, key: str) -> str | None:
        value = self.resources[logical_id].get("Properties", {}).get(key)
        if value is None:
            return None
        resolved = self.resolve(value)
        return None if resolved is NO_VALUE else str(resolved)

    def _arn(
        self, service: str, resource: str, *, region: bool = True, account: bool = True
    ) -> str:
        return (
            f"arn:{self.partition}:{service}:{self.region if region else ''}:"
            f"{self.account if account else ''}:{resource}"
        )

    def _compute(self, logical_id: str) -> Physical:
        kind = self.resources[logical_id]["Type"]
        seed = f"{self.stack_name}/{logical_id}"
        prop = self.name_property

        def named(key: str, limit: int, **kwargs: bool) -> str:
            # As CloudFormation generates them: the stack's name first, so that two stacks with
            # the same logical ids (two runners, say) get their own resources.
            generated = f"{self.stack_name}-{logical_id}"
            return prop(logical_id, key) or bounded_name(generated, limit, **kwargs)

        if kind == "AWS::DynamoDB::Table":
            name = named("TableName", 255)
            arn = self._arn("dynamodb", f"table/{name}")
            return Physical(
                name, {"Arn": arn, "StreamArn": f"{arn}/stream/1970-01-01T00:00:00.000"}
            )
        if kind == "AWS::SQS::Queue":
            name = named("QueueName", 80)
            fifo = self.resources[logical_id].get("Properties", {}).get("FifoQueue")
            if fifo and not name.endswith(".fifo"):
                name = bounded_name(name, 75) + ".fifo"
            url = f"https://sqs.{self.region}.amazonaws.com/{self.account}/{name}"
            return Physical(
                url, {"Arn": self._arn("sqs", name), "QueueName": name, "QueueUrl": url}
            )
        if kind == "AWS::SNS::Topic":
            name = named("TopicName", 256)
            arn = self._arn("sns", name)
            return Physical(arn, {"TopicArn": arn, "TopicName": name})
        if kind == "AWS::S3::Bucket":
            name = prop(logical_id, "BucketName") or bounded_name(
                f"{self.stack_name}-{logical_id}-{hex_id(seed, 8)}", 63, lowercase=True
            )
            return Physical(
                name,
                {
                    "Arn": f"arn:{self.partition}:s3:::{name}",
                    "DomainName": f"{name}.s3.amazonaws.com",
                    "RegionalDomainName": f"{name}.s3.{self.region}.amazonaws.com",
                    "DualStackDomainName": f"{name}.s3.dualstack.{self.region}.amazonaws.com",
                    "WebsiteURL": f"http://{name}.s3-website-{self.region}.amazonaws.com",
                },
            )
        if kind == "AWS::IAM::Role":
            name = named("RoleName", 64)
            path = prop(logical_id, "Path") or "/"
            return Physical(
                name,
                {
                    "Arn": f"arn:{self.partition}:iam::{self.account}:role{path}{name}",
                    "RoleId": "AROA" + hex_id(seed, 17).upper(),
                },
            )
        if kind == "AWS::IAM::ManagedPolicy":
            name = named("ManagedPolicyName", 128)
            arn = f"arn:{self.partition}:iam::{self.account}:policy/{name}"
            return Physical(arn, {"PolicyArn": arn})
        if kind == "AWS::IAM::InstanceProfile":
            name = named("InstanceProfileName", 128)
            return Physical(
                name, {"Arn": f"arn:{self.partition}:iam::{self.account}:instance-profile/{name}"}
            )
        if kind == "AWS::Lambda::Function":
            name = named("FunctionName", 64)
            return Physical(name, {"Arn": self._arn("lambda", f"function:{name}")})
        if kind == "AWS::Events::Rule":
            name = named("Name", 64)
            return Physical(name, {"Arn": self._arn("events", f"rule/{name}")})
        if kind == "AWS::StepFunctions::StateMachine":
            name = named("StateMachineName", 80)
            arn = self._arn("states", f"stateMachine:{name}")
            return Physical(arn, {"Arn": arn, "Name": name, "StateMachineRevisionId": arn})
        if kind == "AWS::Logs::LogGroup":
            name = named("LogGroupName", 512)
            return Physical(name, {"Arn": self._arn("logs", f"log-group:{name}:*")})
        if kind == "AWS::KMS::Key":
            key_id = _uuid_from(seed)
            return Physical(key_id, {"Arn": self._arn("kms", f"key/{key_id}"), "KeyId": key_id})
        if kind == "AWS::EC2::VPC":
            vpc = f"vpc-{hex_id(seed)}"
            cidr = prop(logical_id, "CidrBlock") or "10.0.0.0/16"
            return Physical(
                vpc,
                {
                    "VpcId": vpc,
                    "CidrBlock": cidr,
                    "CidrBlockAssociations": [f"vpc-cidr-assoc-{hex_id(seed + 'c')}"],
                    "DefaultSecurityGroup": f"sg-{hex_id(seed + '/default-sg')}",
                    "DefaultNetworkAcl": f"acl-{hex_id(seed + '/default-acl')}",
                    "Ipv6CidrBlocks": [],
                },
            )
        if kind == "AWS::EC2::Subnet":
            subnet = f"subnet-{hex_id(seed)}"
            zone = prop(logical_id, "AvailabilityZone") or f"{self.region}a"
            return Physical(
                subnet,
                {
                    "SubnetId": subnet,
                    "AvailabilityZone": zone,
                    "AvailabilityZoneId": f"{self.region[:3]}{self.region[-1]}-az1",
                    "VpcId": prop(logical_id, "VpcId"),
                    "CidrBlock": prop(logical_id, "CidrBlock"),
                    "NetworkAclAssociationId": f"aclassoc-{hex_id(seed)}",
                    "Ipv6CidrBlocks": [],
                },
            )
        if kind == "AWS::EC2::SecurityGroup":
            group = f"sg-{hex_id(seed)}"
            return Physical(group, {"GroupId": group, "VpcId": prop(logical_id, "VpcId")})
        prefixes = {
            "AWS::EC2::RouteTable": "rtb",
            "AWS::EC2::InternetGateway": "igw",
            "AWS::EC2::NatGateway": "nat",
            "AWS::EC2::NetworkAcl": "acl",
            "AWS::EC2::VPCEndpoint": "vpce",
            "AWS::EC2::Instance": "i",
            "AWS::EC2::LaunchTemplate": "lt",
            "AWS::EC2::NetworkInterface": "eni",
            "AWS::EC2::TransitGateway": "tgw",
        }
        if kind in prefixes:
            value = f"{prefixes[kind]}-{hex_id(seed)}"
            return Physical(value, {"Id": value, f"{kind.rsplit('::', 1)[-1]}Id": value})
        if kind == "AWS::EC2::EIP":
            address = f"203.0.113.{int(hex_id(seed, 2), 16) % 254 + 1}"
            return Physical(
                address, {"AllocationId": f"eipalloc-{hex_id(seed)}", "PublicIp": address}
            )
        if kind == "AWS::SageMaker::ModelPackageGroup":
            name = named("ModelPackageGroupName", 63)
            arn = self._arn("sagemaker", f"model-package-group/{name.lower()}")
            return Physical(arn, {"ModelPackageGroupArn": arn, "ModelPackageGroupName": name})
        if kind == "AWS::SageMaker::Model":
            name = named("ModelName", 63)
            arn = self._arn("sagemaker", f"model/{name.lower()}")
            return Physical(arn, {"ModelName": name})
        return self._generic(logical_id, kind, seed)

    def _generic(self, logical_id: str, kind: str, seed: str) -> Physical:
        """Any other type: a name from the logical id, an ARN in the service's namespace."""
        parts = kind.split("::")
        service = parts[1].lower() if len(parts) == 3 and parts[0] == "AWS" else "local"
        resource = re.sub(r"(?<!^)(?=[A-Z])", "-", parts[-1]).lower()
        name = bounded_name(logical_id, 64)
        arn = self._arn(service, f"{resource}/{name}")
        return Physical(name, {"Arn": arn, "Id": name, "Name": name})

    # -- intrinsic functions --------------------------------------------------------------

    def pseudo(self, name: str) -> Any:
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": self.partition,
            "AWS::URLSuffix": "amazonaws.com.cn" if self.partition == "aws-cn" else "amazonaws.com",
            "AWS::StackName": self.stack_name,
            "AWS::StackId": self._arn(
                "cloudformation", f"stack/{self.stack_name}/{_uuid_from(self.stack_name)}"
            ),
            "AWS::NotificationARNs": [],
            "AWS::NoValue": NO_VALUE,
        }.get(name)

    def ref(self, name: str) -> Any:
        pseudo = self.pseudo(name)
        if pseudo is not None or name == "AWS::NoValue":
            return pseudo
        parameters = self.template.get("Parameters", {})
        if name in parameters:
            return parameters[name].get("Default", "")
        if name in self.resources:
            return self.physical(name).ref
        raise KeyError(f"Ref {name!r}: no such resource, parameter or pseudo parameter")

    def get_att(self, logical_id: str, attribute: str) -> Any:
        if logical_id not in self.resources:
            raise KeyError(f"Fn::GetAtt {logical_id}.{attribute}: no such resource")
        physical = self.physical(logical_id)
        if attribute in physical.attributes and physical.attributes[attribute] is not None:
            return physical.attributes[attribute]
        if attribute == "Arn":
            return self._generic(logical_id, self.resources[logical_id]["Type"], "").attributes[
                "Arn"
            ]
        placeholder = f"local-unresolved-{logical_id}-{attribute}"
        self.unresolved.append(f"{logical_id}.{attribute}")
        return placeholder

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            self._conditions[name] = bool(self.resolve(self.template["Conditions"][name]))
        return self._conditions[name]

    def resolve(self, node: Any) -> Any:
        """``node`` with every intrinsic function replaced by its local value."""
        return self.value(node)

    def fn_if(self, argument: Any) -> Any:
        name, when_true, when_false = argument
        return self.value(when_true if self.condition(name) else when_false)

    def fn_get_azs(self, argument: Any) -> Any:
        return [f"{self.region}{zone}" for zone in "abc"]

    def unknown(self, name: str, argument: Any) -> Any:
        """Kept as it is, its argument resolved (moto or the runner may know it)."""
        resolved = self.value(argument)
        return {} if resolved is NO_VALUE else {name: resolved}

    def malformed(self, name: str, argument: Any) -> Any:
        raise ValueError(
            f"{name} cannot be resolved locally: {json.dumps(argument, default=str)} is not "
            "an argument CloudFormation takes, or names what the template does not have"
        )

    def _equals(self, argument: Any) -> bool:
        left, right = self.value(argument)
        return bool(left == right)

    def _truth(self, node: Any) -> bool:
        return bool(self.value(node))

    def _import_value(self, argument: Any) -> str:
        self.unresolved.append(f"Fn::ImportValue {argument}")
        return f"local-unresolved-import-{self.value(argument)}"


def _uuid_from(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


__all__ = [
    "DEFAULT_ACCOUNT",
    "DEFAULT_REGION",
    "NO_VALUE",
    "Physical",
    "Resolver",
    "bounded_name",
    "detect_account",
    "detect_region",
    "hex_id",
]
