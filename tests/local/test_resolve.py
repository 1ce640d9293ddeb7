"""CloudFormation semantics of a local deployment: ids per type, intrinsics, the region."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.local.deploy.resolve import Resolver, detect_region

TEMPLATE: dict[str, Any] = {
    "Parameters": {"Stage": {"Type": "String", "Default": "dev"}},
    "Conditions": {"IsDev": {"Fn::Equals": [{"Ref": "Stage"}, "dev"]}},
    "Mappings": {"Sizes": {"dev": {"Count": 2}}},
    "Resources": {
        "Sg": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"VpcId": {"Ref": "Vpc"}}},
        "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.1.0.0/16"}},
        "Subnet": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}}},
        "Queue": {"Type": "AWS::SQS::Queue"},
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "alerts"}},
        "Bucket": {"Type": "AWS::S3::Bucket"},
        "Role": {"Type": "AWS::IAM::Role"},
        "Fn": {"Type": "AWS::Lambda::Function"},
        "Machine": {"Type": "AWS::StepFunctions::StateMachine"},
        "Thing": {"Type": "AWS::Widget::Gadget"},
    },
}


def resolver() -> Resolver:
    return Resolver(TEMPLATE, region="eu-central-1", stack_name="Demo")


def test_refs_and_attributes_have_each_types_shape() -> None:
    r = resolver()
    assert r.resolve({"Fn::GetAtt": ["Sg", "GroupId"]}).startswith("sg-")
    assert r.resolve({"Ref": "Sg"}) == r.resolve({"Fn::GetAtt": ["Sg", "GroupId"]})
    assert r.resolve({"Fn::GetAtt": ["Sg", "VpcId"]}) == r.resolve({"Ref": "Vpc"})
    assert r.resolve({"Ref": "Vpc"}).startswith("vpc-")
    assert r.resolve({"Ref": "Subnet"}).startswith("subnet-")
    assert (
        r.resolve({"Ref": "Queue"})
        == "https://sqs.eu-central-1.amazonaws.com/123456789012/Demo-Queue"
    )
    assert (
        r.resolve({"Fn::GetAtt": ["Queue", "Arn"]})
        == "arn:aws:sqs:eu-central-1:123456789012:Demo-Queue"
    )
    assert r.resolve({"Ref": "Topic"}) == "arn:aws:sns:eu-central-1:123456789012:alerts"
    bucket = r.resolve({"Ref": "Bucket"})
    assert bucket == bucket.lower() and 3 <= len(bucket) <= 63
    assert r.resolve({"Fn::GetAtt": ["Role", "Arn"]}) == "arn:aws:iam::123456789012:role/Demo-Role"
    assert r.resolve({"Fn::GetAtt": ["Fn", "Arn"]}).endswith(":function:Demo-Fn")
    assert r.resolve({"Ref": "Machine"}).endswith(":stateMachine:Demo-Machine")
    assert r.resolve({"Fn::GetAtt": ["Thing", "Arn"]}).startswith("arn:aws:widget:eu-central-1:")


def test_intrinsic_functions() -> None:
    r = resolver()
    assert r.resolve({"Fn::Sub": "${AWS::Region}/${Topic.TopicName}/${!Literal}"}) == (
        "eu-central-1/alerts/${Literal}"
    )
    assert r.resolve({"Fn::Sub": ["${A}-${Stage}", {"A": {"Ref": "AWS::AccountId"}}]}) == (
        "123456789012-dev"
    )
    assert r.resolve({"Fn::Join": [":", ["a", {"Ref": "AWS::Partition"}]]}) == "a:aws"
    assert r.resolve({"Fn::Select": [1, {"Fn::Split": [",", "x,y,z"]}]}) == "y"
    assert r.resolve({"Fn::FindInMap": ["Sizes", {"Ref": "Stage"}, "Count"]}) == 2
    assert r.resolve({"Fn::If": ["IsDev", "small", "large"]}) == "small"
    assert r.resolve({"Key": {"Ref": "AWS::NoValue"}, "Other": 1}) == {"Other": 1}
    assert r.resolve({"Fn::GetAZs": ""})[0] == "eu-central-1a"


def test_the_region_comes_from_the_manifest_then_the_arns(tmp_path: Path) -> None:
    template = {"Resources": {}, "Outputs": {"A": {"Value": "arn:aws:sns:ap-south-1:1:t"}}}
    assert detect_region(template, None) == "ap-south-1"
    assert detect_region({"Resources": {}}, None) == "us-west-2"
    path = tmp_path / "Demo.template.json"
    path.write_text(json.dumps(template))
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "artifacts": {
                    "Demo": {
                        "type": "aws:cloudformation:stack",
                        "environment": "aws://unknown-account/sa-east-1",
                        "properties": {"templateFile": "Demo.template.json"},
                    }
                }
            }
        )
    )
    assert detect_region(template, path) == "sa-east-1"


def test_a_malformed_function_is_a_clear_error_naming_it() -> None:
    r = resolver()
    with pytest.raises(ValueError, match="Fn::Join cannot be resolved locally"):
        r.resolve({"Fn::Join": ["-"]})
    with pytest.raises(ValueError, match="Fn::Select cannot be resolved locally"):
        r.resolve({"Fn::Select": [3, ["a"]]})
    # A function no resolver knows is kept, its argument resolved, for moto to judge.
    assert r.resolve({"Fn::Unknown": {"Ref": "AWS::Region"}}) == {"Fn::Unknown": "eu-central-1"}
