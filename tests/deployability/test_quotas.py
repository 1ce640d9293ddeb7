"""Each quota on template dicts: a template just under its limit passes, one just over fails."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.deployability import catalogue as quotas
from hetero_constructs.deployability import worst_case
from hetero_constructs.deployability.catalogue import QUOTAS, check_template, measure_template
from hetero_constructs.deployability.deploy_time import KnownValues
from hetero_constructs.deployability.quota import Limits, Measurement, StackTemplate
from tests.fixtures.templates import document

ROLE = {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}}}


def role(**properties: Any) -> dict[str, Any]:
    return {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}, **properties}}


def violated(template: dict[str, Any], limits: Limits | None = None, **stack: Any) -> list[str]:
    return [
        m.quota
        for m in check_template(StackTemplate(template, **stack), limits or quotas.DEFAULT_LIMITS)
    ]


def only(template: dict[str, Any], quota: str, **stack: Any) -> list[Measurement]:
    return [m for m in measure_template(StackTemplate(template, **stack)) if m.quota == quota]


# -- IAM -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [0, 1])
def test_role_inline_policies_at_and_over_the_limit(extra: int) -> None:
    # The policy name counts too: "P" plus a document of 10,239 characters is 10,240.
    template = {
        "Resources": {
            "Role": role(Policies=[{"PolicyName": "P", "PolicyDocument": document(10_239 + extra)}])
        }
    }
    assert violated(template) == (["DEPLOY-ROLE-INLINE-POLICIES"] if extra else [])


def test_role_inline_policies_add_up_across_resources_and_ignore_white_space() -> None:
    spaced = document(4_000)
    spaced["Statement"][0]["Condition"] = {"StringLike": {"s3:prefix": ["a b  c"]}}
    template = {
        "Resources": {
            "Role": role(Policies=[{"PolicyName": "Inline", "PolicyDocument": document(4_000)}]),
            "Attached": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyName": "Attached",
                    "PolicyDocument": spaced,
                    "Roles": [{"Ref": "Role"}],
                },
            },
            "RolePolicy": {
                "Type": "AWS::IAM::RolePolicy",
                "Properties": {
                    "PolicyName": "Third",
                    "PolicyDocument": document(2_300),
                    "RoleName": {"Ref": "Role"},
                },
            },
        }
    }
    (found,) = only(template, "DEPLOY-ROLE-INLINE-POLICIES")
    condition = len('"Condition":{"StringLike":{"s3:prefix":["abc"]}}') + 1  # and a comma
    assert found.measured == 6 + 4_000 + 8 + 4_000 + condition + 5 + 2_300
    assert found.exceeded and found.logical_id == "Role"
    message = str(found.violation())
    assert "[DEPLOY-ROLE-INLINE-POLICIES] Role:" in message
    assert "Attached 4,057; Inline 4,006; Third 2,305" in message
    assert "Allowed: at most 10,240 non-whitespace characters" in message


def test_a_policy_on_two_roles_counts_for_both_and_external_roles_by_name() -> None:
    template = {
        "Resources": {
            "A": role(RoleName="role-a"),
            "B": role(),
            "Shared": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyName": "S",
                    "PolicyDocument": document(10_240),
                    "Roles": ["role-a", {"Ref": "B"}, "imported-role"],
                },
            },
        }
    }
    found = {m.subject: m.measured for m in only(template, "DEPLOY-ROLE-INLINE-POLICIES")}
    assert found == {
        "role A": 10_241,
        "role B": 10_241,
        "role imported-role (outside this template)": 10_241,
    }


@pytest.mark.parametrize("extra", [0, 1])
def test_managed_policy_size(extra: int) -> None:
    template = {
        "Resources": {
            "Managed": {
                "Type": "AWS::IAM::ManagedPolicy",
                "Properties": {"PolicyDocument": document(6_144 + extra)},
            }
        }
    }
    assert violated(template) == (["DEPLOY-MANAGED-POLICY-SIZE"] if extra else [])


def test_numbers_and_booleans_count_as_quoted_strings() -> None:
    base = document(6_100)
    base["Statement"][0]["Condition"] = {"NumericLessThanEquals": {"k": 14400}, "Bool": {"b": True}}
    template = {
        "Resources": {
            "Managed": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": base}}
        }
    }
    (found,) = only(template, "DEPLOY-MANAGED-POLICY-SIZE")
    quoted = len(',"Condition":{"NumericLessThanEquals":{"k":"14400"},"Bool":{"b":"true"}}')
    assert found.measured == 6_100 + quoted


@pytest.mark.parametrize("attached", [0, 1])
def test_managed_policies_per_role(attached: int) -> None:
    arns = [f"arn:aws:iam::aws:policy/Policy{i}" for i in range(9)]
    policy = {
        "Type": "AWS::IAM::ManagedPolicy",
        "Properties": {"PolicyDocument": document(200), "Roles": [{"Ref": "Role"}]},
    }
    resources: dict[str, Any] = {
        # Named both ways: attached once.
        "Role": role(ManagedPolicyArns=[*arns, {"Ref": "Mine"}]),
        "Mine": policy,
    }
    if attached:
        resources["Other"] = policy
    template = {"Resources": resources}
    (found,) = only(template, "DEPLOY-ROLE-MANAGED-POLICIES")
    assert found.measured == 10 + attached
    assert violated(template) == (["DEPLOY-ROLE-MANAGED-POLICIES"] if attached else [])
    assert violated(template, Limits(managed_policies_per_role=20)) == []


# -- CloudFormation ------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [0, 1])
def test_resources_per_stack(extra: int) -> None:
    template = {"Resources": {f"Topic{i}": {"Type": "AWS::SNS::Topic"} for i in range(500 + extra)}}
    assert violated(template) == (["DEPLOY-STACK-RESOURCES"] if extra else [])


@pytest.mark.parametrize("extra", [0, 1])
def test_template_size_of_the_file(extra: int) -> None:
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
    assert violated(template, size_bytes=1_000_000 + extra) == (
        ["DEPLOY-TEMPLATE-SIZE"] if extra else []
    )


@pytest.mark.parametrize("extra", [0, 1])
def test_template_size_as_cdk_writes_it(extra: int) -> None:
    template: dict[str, Any] = {"Description": "", "Resources": {}}
    empty = len(json.dumps(template, indent=1))
    template["Description"] = "d" * (1_000_000 + extra - empty)
    (found,) = only(template, "DEPLOY-TEMPLATE-SIZE")
    assert found.measured == 1_000_000 + extra and found.exceeded == bool(extra)


# -- Step Functions, EventBridge, Lambda ---------------------------------------------------------


def state_machine(**properties: Any) -> dict[str, Any]:
    return {"Type": "AWS::StepFunctions::StateMachine", "Properties": properties}


@pytest.mark.parametrize("extra", [0, 1])
def test_state_machine_definition_size(extra: int) -> None:
    shell = '{"Comment":"","StartAt":"S","States":{"S":{"Type":"Succeed"}}}'
    comment = "c" * (1_048_576 + extra - len(shell) - 2) + "é"  # é: two bytes
    definition = shell.replace('"Comment":""', f'"Comment":"{comment}"')
    assert len(definition.encode()) == 1_048_576 + extra
    template = {"Resources": {"Machine": state_machine(DefinitionString=definition)}}
    assert violated(template, size_bytes=1_000) == (
        ["DEPLOY-STATE-MACHINE-DEFINITION-SIZE"] if extra else []
    )


def test_definition_join_object_and_substitutions_are_sized_as_deployed() -> None:
    joined = state_machine(
        DefinitionString={"Fn::Join": ["", ['{"R":"arn:', {"Ref": "AWS::Partition"}, '"}']]}
    )
    substituted = state_machine(
        Definition={"R": "${Fn}"},
        DefinitionSubstitutions={"Fn": {"Fn::GetAtt": ["Function", "Arn"]}},
    )
    template = {
        "Resources": {
            "Joined": joined,
            "Substituted": substituted,
            "Function": {"Type": "AWS::Lambda::Function", "Properties": {"FunctionName": "f"}},
        }
    }
    known = KnownValues(account="111122223333", region="us-west-2")
    sizes = {
        m.logical_id: m.measured
        for m in only(template, "DEPLOY-STATE-MACHINE-DEFINITION-SIZE", known=known)
    }
    assert sizes == {
        "Joined": len('{"R":"arn:aws"}'),
        "Substituted": len('{"R":"arn:aws:lambda:us-west-2:111122223333:function:f"}'),
    }
    unknown = {m.logical_id: m for m in only(template, "DEPLOY-STATE-MACHINE-DEFINITION-SIZE")}
    assert unknown["Joined"].measured == len('{"R":"arn:aws-us-gov"}')
    assert unknown["Joined"].estimated


def rule(pattern: Any) -> dict[str, Any]:
    return {"Type": "AWS::Events::Rule", "Properties": {"EventPattern": pattern}}


def pattern_of(characters: int) -> dict[str, Any]:
    shell = {"source": ["aws.states"], "detail": {"name": [""]}}
    empty = len(json.dumps(shell, separators=(",", ":")))
    shell["detail"]["name"] = ["n" * (characters - empty)]
    return shell


@pytest.mark.parametrize("extra", [0, 1])
def test_event_pattern_size_and_its_adjustable_limit(extra: int) -> None:
    template = {"Resources": {"Rule": rule(pattern_of(2_048 + extra))}}
    assert violated(template) == (["DEPLOY-EVENT-PATTERN-SIZE"] if extra else [])
    raised = Limits(event_pattern_size=4_096)
    assert violated({"Resources": {"Rule": rule(pattern_of(4_096 + extra))}}, raised) == (
        ["DEPLOY-EVENT-PATTERN-SIZE"] if extra else []
    )
    as_text = {"Resources": {"Rule": rule(json.dumps(pattern_of(2_048 + extra)))}}
    # A pattern given as a string is measured as given (here with json.dumps' spaces).
    assert violated(as_text) == ["DEPLOY-EVENT-PATTERN-SIZE"]


def test_event_pattern_limit_beyond_the_api_is_refused() -> None:
    with pytest.raises(ValueError, match=r"Allowed: 1 to 4096 characters"):
        Limits(event_pattern_size=5_000)
    with pytest.raises(ValueError, match="managed_policies_per_role 0"):
        Limits(managed_policies_per_role=0)


def test_event_pattern_of_state_machine_arns_is_sized_worst_case() -> None:
    arn = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":states:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":stateMachine:job-0",
            ],
        ]
    }
    template = {"Resources": {"Rule": rule({"detail": {"stateMachineArn": [arn]}})}}
    (found,) = only(template, "DEPLOY-EVENT-PATTERN-SIZE")
    worst = "arn:aws-us-gov:states:us-isof-south-1:123456789012:stateMachine:job-0"
    assert found.measured == len('{"detail":{"stateMachineArn":[""]}}') + len(worst)
    assert found.estimated


def function(**properties: Any) -> dict[str, Any]:
    return {"Type": "AWS::Lambda::Function", "Properties": properties}


@pytest.mark.parametrize("extra", [0, 1])
def test_lambda_environment_size_in_bytes(extra: int) -> None:
    empty = len('{"A":"","B":""}')
    variables = {"A": "ü" * 1_000, "B": "v" * (4_096 + extra - empty - 2_000)}
    assert len(json.dumps(variables, separators=(",", ":"), ensure_ascii=False).encode()) == (
        4_096 + extra
    )
    template = {"Resources": {"F": function(Environment={"Variables": variables})}}
    assert violated(template) == (["DEPLOY-LAMBDA-ENVIRONMENT-SIZE"] if extra else [])


# -- names ---------------------------------------------------------------------------------------

NAMES = [
    ("DEPLOY-ROLE-NAME", "AWS::IAM::Role", "RoleName", 64),
    ("DEPLOY-ROLE-PATH", "AWS::IAM::Role", "Path", 512),
    ("DEPLOY-FUNCTION-NAME", "AWS::Lambda::Function", "FunctionName", 64),
    ("DEPLOY-STATE-MACHINE-NAME", "AWS::StepFunctions::StateMachine", "StateMachineName", 80),
    ("DEPLOY-LOG-GROUP-NAME", "AWS::Logs::LogGroup", "LogGroupName", 512),
]


@pytest.mark.parametrize("extra", [0, 1])
@pytest.mark.parametrize(("quota", "kind", "name_property", "limit"), NAMES)
def test_name_limits(quota: str, kind: str, name_property: str, limit: int, extra: int) -> None:
    value = (
        "/" + "p" * (limit + extra - 2) + "/" if name_property == "Path" else "n" * (limit + extra)
    )
    template = {"Resources": {"Named": {"Type": kind, "Properties": {name_property: value}}}}
    assert violated(template) == ([quota] if extra else [])
    assert quotas.quota_by_id(quota).limit.startswith(f"{limit} characters")


def test_names_built_from_the_stack_name_use_it_when_known() -> None:
    name = {"Fn::Join": ["-", [{"Ref": "AWS::StackName"}, "submit-role"]]}
    template = {"Resources": {"Role": role(RoleName=name)}}
    assert violated(template, known=KnownValues(stack_name="Training")) == []
    (found,) = check_template(StackTemplate(template))  # an unknown stack name: 128 characters
    assert found.quota == "DEPLOY-ROLE-NAME" and found.estimated
    assert found.measured == 128 + len("-submit-role")


@pytest.mark.parametrize("extra", [0, 1])
def test_literal_training_job_names_in_definitions(extra: int) -> None:
    name = "j" * (63 + extra)
    definition = {
        "Fn::Join": [
            "",
            [
                '{"States":{"T":{"Parameters":{"TrainingJobName":"',
                name,
                '","RoleArn":"',
                {"Fn::GetAtt": ["Role", "Arn"]},
                '","TrainingJobName.$":"$.name"}}}}',
            ],
        ]
    }
    template = {"Resources": {"Machine": state_machine(DefinitionString=definition), "Role": ROLE}}
    assert violated(template) == (["DEPLOY-TRAINING-JOB-NAME"] if extra else [])
    as_object = {
        "Resources": {
            "Machine": state_machine(
                Definition={"States": {"T": {"Parameters": {"TrainingJobName": name}}}}
            )
        }
    }
    assert violated(as_object) == (["DEPLOY-TRAINING-JOB-NAME"] if extra else [])


def test_job_names_built_at_run_time_are_not_checked() -> None:
    definition = '{"P":{"TrainingJobName":"{% $states.input.name %}","X":"${Name}"}}'
    template = {
        "Resources": {
            "Machine": state_machine(
                DefinitionString={"Fn::Sub": definition.replace("TrainingJobName", "N")}
            ),
            "Other": state_machine(DefinitionString=definition),
        }
    }
    assert only(template, "DEPLOY-TRAINING-JOB-NAME") == []


# -- the registry, its catalogue and the module's purity -----------------------------------------


def test_every_quota_is_documented_with_its_source_and_fix() -> None:
    assert len({q.id for q in QUOTAS}) == len(QUOTAS) == 15
    for registered in QUOTAS:
        assert registered.id.startswith("DEPLOY-")
        assert registered.title and registered.limit and registered.fix, registered.id
        assert "docs.aws.amazon.com" in registered.source or "botocore" in registered.source


def test_catalogue_is_current() -> None:
    catalogue = Path(__file__).parents[2] / "docs" / "deployability.md"
    assert catalogue.read_text() == quotas.render(), (
        "run `python -m hetero_constructs.deployability.catalogue > docs/deployability.md`"
    )


@pytest.mark.parametrize("module", [quotas, worst_case])
def test_measurements_do_not_import_the_cdk(module: Any) -> None:
    tree = ast.parse(Path(module.__file__).read_text())
    imported = {
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
        )
    }
    assert not {n for n in imported if n.split(".")[0] in {"aws_cdk", "constructs", "jsii"}}
    assert {n for n in imported if n.startswith("hetero_constructs.constructs")} <= {
        "hetero_constructs.deployability.worst_case",
        "hetero_constructs.constructs",
    }


def test_command_line_prints_violations_and_exits_1(tmp_path: Path, capsys: Any) -> None:
    over = tmp_path / "over.template.json"
    over.write_text(json.dumps({"Resources": {"Role": role(RoleName="r" * 65)}}))
    under = tmp_path / "under.template.json"
    under.write_text(json.dumps({"Resources": {"Role": role(RoleName="r" * 64)}}))
    assert quotas.main([str(under)]) == 0
    assert quotas.main([str(under), str(over)]) == 1
    out = capsys.readouterr().out
    assert "over.template.json: [DEPLOY-ROLE-NAME]" in out and "under" not in out
