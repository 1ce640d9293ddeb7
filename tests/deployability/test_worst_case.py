"""Worst-case sizing of deploy-time values, against the values they resolve to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hetero_constructs.deployability.catalogue import measure_template
from hetero_constructs.deployability.deploy_time import UNKNOWN_LENGTH, KnownValues, partition_facts
from hetero_constructs.deployability.quota import StackTemplate
from hetero_constructs.deployability.worst_case import WorstCase
from tests.fixtures.example_app import Synthesized
from tests.fixtures.templates import literal

ARN = {
    "Fn::Join": [
        "",
        [
            "arn:",
            {"Ref": "AWS::Partition"},
            ":states:",
            {"Ref": "AWS::Region"},
            ":",
            {"Ref": "AWS::AccountId"},
            ":stateMachine:job",
        ],
    ]
}
KNOWN = KnownValues(account="111122223333", region="us-west-2", stack_name="Training")


def every_region() -> list[tuple[str, str]]:
    """(partition, region) for every region botocore knows."""
    import botocore.session

    data = botocore.session.get_session().get_component("data_loader").load_data("partitions")
    return [
        (partition["id"], region)
        for partition in data["partitions"]
        for region in partition["regions"]
        if not region.endswith("-global")
    ]


def test_pseudo_parameters_are_at_least_as_long_as_in_any_region() -> None:
    worst = WorstCase({})
    estimate = worst.text(ARN)
    resolved = [
        f"arn:{partition}:states:{region}:123456789012:stateMachine:job"
        for partition, region in every_region()
    ]
    assert len(estimate) >= max(len(r) for r in resolved)
    # The longest partition and the longest region, wherever each is.
    facts = partition_facts()
    longest = f"arn:{facts.longest_partition}:states:{facts.longest_region}:123456789012:"
    assert len(estimate) == len(longest + "stateMachine:job") <= max(map(len, resolved)) + 1
    assert worst.estimates == 3 and worst.guesses == 0


def test_known_values_resolve_exactly() -> None:
    worst = WorstCase({}, KNOWN)
    assert worst.text(ARN) == "arn:aws:states:us-west-2:111122223333:stateMachine:job"
    assert worst.exact(ARN) == worst.text(ARN)
    assert worst.estimates == 0
    china = WorstCase({}, KnownValues(region="cn-north-1"))
    assert china.text({"Ref": "AWS::Partition"}) == "aws-cn"
    assert china.text({"Ref": "AWS::URLSuffix"}) == "amazonaws.com.cn"
    assert WorstCase({}).exact(ARN) is None


def test_facts_come_from_botocore_without_the_global_pseudo_regions() -> None:
    facts = partition_facts()
    assert not facts.longest_region.endswith("-global")
    assert len(facts.longest_partition) == len("aws-us-gov")
    assert facts.partition_of("us-gov-west-1") == ("aws-us-gov", "amazonaws.com")


ROLE_TYPE = "AWS::IAM::Role"


def test_role_arn_with_a_literal_name_and_path_is_exact() -> None:
    template = {
        "Resources": {"R": {"Type": ROLE_TYPE, "Properties": {"RoleName": "r", "Path": "/x/"}}}
    }
    worst = WorstCase(template, KNOWN)
    assert worst.text({"Fn::GetAtt": ["R", "Arn"]}) == "arn:aws:iam::111122223333:role/x/r"
    assert worst.text({"Fn::GetAtt": "R.Arn"}) == "arn:aws:iam::111122223333:role/x/r"
    assert worst.text({"Ref": "R"}) == "r"


def test_generated_role_names_are_sized_like_cloudformation_generates_them() -> None:
    template = {"Resources": {"SubmitRoleA9D15BF7": {"Type": ROLE_TYPE, "Properties": {}}}}
    # What CloudFormation names such a role in the stack "Training" (a 13-character suffix).
    deployed = "Training-SubmitRoleA9D15BF7-Ab1Cd2Ef3Gh4I"
    estimate = WorstCase(template, KNOWN).text({"Ref": "SubmitRoleA9D15BF7"})
    assert len(estimate) == len(deployed)
    # An unknown (or long) stack name: the role-name limit.
    assert len(WorstCase(template).text({"Ref": "SubmitRoleA9D15BF7"})) == 64
    arn = WorstCase(template).text({"Fn::GetAtt": ["SubmitRoleA9D15BF7", "Arn"]})
    assert arn == "arn:" + "p" * 10 + ":iam::000000000000:role/" + "n" * 64


def test_types_with_ids_and_arns_as_their_ref() -> None:
    template = {
        "Resources": {
            "Key": {"Type": "AWS::KMS::Key", "Properties": {}},
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {"StateMachineName": "job"},
            },
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "q"}},
        }
    }
    worst = WorstCase(template, KNOWN)
    assert len(worst.text({"Ref": "Key"})) == len("1234abcd-12ab-34cd-56ef-1234567890ab")
    assert worst.text({"Ref": "Machine"}) == (
        "arn:aws:states:us-west-2:111122223333:stateMachine:job"
    )
    assert worst.text({"Fn::GetAtt": ["Machine", "Name"]}) == "job"
    assert worst.text({"Ref": "Queue"}) == "https://sqs.us-west-2.amazonaws.com/111122223333/q"


def test_sub_with_references_attributes_escapes_and_variables() -> None:
    template = {
        "Resources": {"F": {"Type": "AWS::Lambda::Function", "Properties": {"FunctionName": "f"}}}
    }
    worst = WorstCase(template, KNOWN)
    assert worst.text({"Fn::Sub": "${AWS::Region}/${F}/${F.Arn}/${!Literal}"}) == (
        "us-west-2/f/arn:aws:lambda:us-west-2:111122223333:function:f/${Literal}"
    )
    assert worst.text({"Fn::Sub": ["${A}-${B}", {"A": "x", "B": {"Ref": "AWS::AccountId"}}]}) == (
        "x-111122223333"
    )


def test_find_in_map_takes_the_known_key_or_the_longest_value() -> None:
    template = {
        "Mappings": {"Accounts": {"us-west-2": {"value": "763104351884"}, "x": {"value": "1"}}}
    }
    node = {"Fn::FindInMap": ["Accounts", {"Ref": "AWS::Region"}, "value"]}
    assert WorstCase(template, KNOWN).text(node) == "763104351884"
    worst = WorstCase(template)
    assert worst.text(node) == "763104351884" and worst.estimates >= 1


def test_conditions_selections_and_no_value() -> None:
    worst = WorstCase({}, KNOWN)
    assert worst.text({"Fn::If": ["C", "short", "much-longer"]}) == "much-longer"
    assert worst.value({"A": {"Fn::If": ["C", {"Ref": "AWS::NoValue"}, "x"]}}) == {"A": "x"}
    assert worst.value({"A": {"Ref": "AWS::NoValue"}, "B": 1}) == {"B": 1}
    assert worst.text({"Fn::Select": [1, ["a", "bb", "c"]]}) == "bb"
    assert worst.text({"Fn::Select": [0, {"Fn::Split": [",", "a,b"]}]}) == "a"
    assert worst.text({"Fn::Select": [{"Ref": "P"}, ["a", "bbb"]]}) == "bbb"
    assert worst.text({"Fn::Base64": "abc"}) == "YWJj"
    assert worst.text({"Fn::Join": [",", {"Fn::GetAZs": ""}]}).count("us-west-2") == 6


def test_parameters_and_unknowns() -> None:
    template = {
        "Parameters": {
            "Choice": {"Type": "String", "AllowedValues": ["a", "abcd"]},
            "Bounded": {"Type": "String", "MaxLength": 7},
            "Defaulted": {"Type": "String", "Default": "dflt"},
            "Open": {"Type": "String"},
        }
    }
    worst = WorstCase(template)
    assert [len(worst.text({"Ref": p})) for p in ("Choice", "Bounded", "Defaulted")] == [4, 7, 4]
    assert worst.guesses == 0
    assert len(worst.text({"Ref": "Open"})) == UNKNOWN_LENGTH
    assert len(worst.text({"Fn::ImportValue": "Export"})) == UNKNOWN_LENGTH
    assert worst.guesses == 2


def _sizes(template: dict[str, Any], **stack: Any) -> dict[tuple[str, str], int]:
    return {
        (m.quota, m.subject): m.measured for m in measure_template(StackTemplate(template, **stack))
    }


def deployed(template: dict[str, Any], stack_name: str) -> dict[str, Any]:
    """The template as deployed: every reference literal (tests/cdk/templates.py), each
    resource named as CloudFormation names it (stack, logical id, a 13-character suffix)."""
    text = json.dumps(literal(template, template))
    names = {}
    for logical_id in template["Resources"]:
        name = f"{stack_name}-{logical_id}-"[: 64 - 13] + "ABCDEFGHIJKLM"
        names[logical_id] = name
        text = text.replace(f"ref-{logical_id.lower()}", name).replace(logical_id.lower(), name)
    result = json.loads(text)
    for logical_id, resource in result["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role":
            resource["Properties"]["RoleName"] = names[logical_id]
    return result  # type: ignore[no-any-return]


def test_the_example_estimates_are_never_below_the_deployed_template(
    example: Synthesized,
) -> None:
    stack_name = example.stack.stack_name
    resolved = _sizes(deployed(example.template, stack_name))
    estimated = _sizes(example.template)
    assert resolved.keys() - {("DEPLOY-ROLE-NAME", s) for _, s in resolved} == estimated.keys()
    below = {key: (estimated[key], size) for key, size in estimated.items() if size < resolved[key]}
    assert below == {}
    # Knowing the stack's account, region and name brings the estimate closer.
    known = KnownValues(account="111122223333", region="us-west-2", stack_name=stack_name)
    closer = _sizes(example.template, known=known)
    assert all(resolved[key] <= closer[key] <= estimated[key] for key in estimated)
    assert any(closer[key] < estimated[key] for key in estimated)


@pytest.mark.parametrize("region", ["us-east-1", "us-gov-west-1", "cn-northwest-1"])
def test_the_example_fits_every_quota_in_any_region(example: Synthesized, region: str) -> None:
    known = KnownValues(region=region, stack_name=example.stack.stack_name)
    measured = measure_template(StackTemplate(example.template, known=known))
    assert [m for m in measured if m.exceeded] == []
    assert {m.quota for m in measured} >= {
        "DEPLOY-ROLE-INLINE-POLICIES",
        "DEPLOY-STACK-RESOURCES",
        "DEPLOY-TEMPLATE-SIZE",
        "DEPLOY-STATE-MACHINE-DEFINITION-SIZE",
        "DEPLOY-EVENT-PATTERN-SIZE",
        "DEPLOY-LAMBDA-ENVIRONMENT-SIZE",
        "DEPLOY-STATE-MACHINE-NAME",
    }
