"""Every deployability quota through a real synth: at its limit the app synthesizes, one over
fails ``app.synth()`` with the rule id, the construct path, the measured size and the limit.

Every stack holds a ``HeterogeneousTrainingJob``, so the checks are on the way users get them
(the job's runner enables them; no test here calls ``enable_deployability_checks`` except to
raise an adjustable limit). The sized resource is a raw L1 whose size is computed from the
limit, so the arithmetic is the test's own. The two quotas that measure the whole stack
(resource count, template size) take the job's share from one probe synth of the same stack.
Templates are written with path metadata, as ``cdk synth`` writes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import cx_api

from hetero_constructs import HeterogeneousTrainingJob
from hetero_constructs.deployability.catalogue import QUOTAS, measure_template
from hetero_constructs.deployability.deploy_time import KnownValues
from hetero_constructs.deployability.plugin import (
    DISABLE_CONTEXT_KEY,
    PLUGIN_NAME,
    enable_deployability_checks,
)
from hetero_constructs.deployability.quota import StackTemplate
from tests.fixtures.construct_specs import spec
from tests.fixtures.templates import document

STACK = "Quota"
REGION = "us-west-2"
PATH_METADATA = {"aws:cdk:enable-path-metadata": True}
# CDK's own TooManyResourcesInStack error would stop the synth at 500 resources first.
NO_CDK_RESOURCE_LIMIT = {"@aws-cdk/core:stackResourceLimit": 0}
ROLE_ARN = "arn:aws:iam::111122223333:role/Quota"
ASSUME = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:*"}
    ],
}


@dataclass(frozen=True)
class Probe:
    """The job's stack without padding: what the stack-wide quotas start from."""

    resources: int
    template_bytes: int  # with an empty padding resource, see template_size


def job_stack(app: cdk.App) -> cdk.Stack:
    stack = cdk.Stack(app, STACK, env=cdk.Environment(region=REGION))
    HeterogeneousTrainingJob(stack, "Job", spec=spec())
    return stack


def padding(stack: cdk.Stack, characters: int) -> None:
    """A resource whose Metadata (any JSON CloudFormation keeps) holds ``characters`` x's."""
    handle = cdk.CfnResource(stack, "Padding", type="AWS::CloudFormation::WaitConditionHandle")
    handle.cfn_options.metadata = {"Padding": "x" * characters}


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Probe:
    app = cdk.App(
        outdir=str(tmp_path_factory.mktemp("probe.out")),
        context={**PATH_METADATA, DISABLE_CONTEXT_KEY: False},
    )
    stack = job_stack(app)
    padding(stack, 0)
    artifact = app.synth().get_stack_by_name(STACK)
    template_file = Path(artifact.template_full_path)
    resources = len(json.loads(template_file.read_text())["Resources"]) - 1  # not the padding
    return Probe(resources, template_file.stat().st_size)


# -- what each case adds to the job's stack: a resource of the given size, and its path ----------


def role_inline_policies(stack: cdk.Stack, size: int, probe: Probe) -> str:
    # The policy name counts too: "P" plus a document of size - 1.
    policy = iam.CfnRole.PolicyProperty(policy_name="P", policy_document=document(size - 1))
    iam.CfnRole(stack, "PolicyRole", assume_role_policy_document=ASSUME, policies=[policy])
    return f"{STACK}/PolicyRole"


def managed_policy_size(stack: cdk.Stack, size: int, probe: Probe) -> str:
    iam.CfnManagedPolicy(stack, "Managed", policy_document=document(size))
    return f"{STACK}/Managed"


def role_managed_policies(stack: cdk.Stack, size: int, probe: Probe) -> str:
    arns = [f"arn:aws:iam::aws:policy/Policy{index}" for index in range(size)]
    iam.CfnRole(stack, "ManagedRole", assume_role_policy_document=ASSUME, managed_policy_arns=arns)
    return f"{STACK}/ManagedRole"


def stack_resources(stack: cdk.Stack, size: int, probe: Probe) -> str:
    """``@aws-cdk/core:stackResourceLimit`` 0: otherwise CDK's own error (the same 500, a
    plain RuntimeError without rule or path) stops the synth before the check runs."""
    for index in range(size - probe.resources):
        cdk.CfnResource(stack, f"Handle{index}", type="AWS::CloudFormation::WaitConditionHandle")
    return STACK


def template_size(stack: cdk.Stack, size: int, probe: Probe) -> str:
    padding(stack, size - probe.template_bytes)  # ASCII without escapes: one byte each
    return STACK


def definition_text(comment: str, value: str, copies: int) -> tuple[str, str]:
    """A Pass state's definition with ``copies`` references to one substitution, and the text
    Step Functions receives once CloudFormation substitutes ``value``."""
    results = ",".join(['"${Pad}"'] * copies)
    text = (
        '{"StartAt":"P","States":{"P":{"Type":"Pass","End":true,'
        f'"Comment":"{comment}","Result":[{results}]}}}}}}'
    )
    return text, text.replace("${Pad}", value)


def state_machine_definition(stack: cdk.Stack, size: int, probe: Probe) -> str:
    """Written out in full, a 1 MB definition makes the template larger than its own limit
    (1,000,000 bytes), and DEPLOY-TEMPLATE-SIZE would fail the synth too. So the definition
    repeats one ``DefinitionSubstitutions`` value 16 times: ~65 KB in the template, 1 MB as
    CloudFormation hands it to Step Functions."""
    copies = 16
    fixed = len(definition_text("", "", copies)[1])
    value, comment = divmod(size - fixed, copies)
    text, deployed = definition_text("c" * comment, "v" * value, copies)
    assert len(deployed.encode()) == size and len(text) < 100_000
    sfn.CfnStateMachine(
        stack,
        "Large",
        role_arn=ROLE_ARN,
        definition_string=text,
        definition_substitutions={"Pad": "v" * value},
    )
    return f"{STACK}/Large"


def event_pattern(stack: cdk.Stack, size: int, probe: Probe) -> str:
    empty = len(json.dumps({"source": [""]}, separators=(",", ":")))
    events.CfnRule(stack, "Rule", event_pattern={"source": ["s" * (size - empty)]})
    return f"{STACK}/Rule"


def function(stack: cdk.Stack, construct_id: str, **properties: Any) -> None:
    lambda_.CfnFunction(
        stack,
        construct_id,
        code=lambda_.CfnFunction.CodeProperty(zip_file="def handler(event, context): pass"),
        role=ROLE_ARN,
        handler="index.handler",
        runtime="python3.12",
        **properties,
    )


def lambda_environment(stack: cdk.Stack, size: int, probe: Probe) -> str:
    empty = len(json.dumps({"PAD": ""}, separators=(",", ":")))
    variables = {"PAD": "e" * (size - empty)}
    function(
        stack,
        "Environment",
        environment=lambda_.CfnFunction.EnvironmentProperty(variables=variables),
    )
    return f"{STACK}/Environment"


# iam.Role, sfn.StateMachine and lambda_.Function refuse a literal name (or role path) over
# these limits when they are constructed; their L1s take it, and so do names built from tokens.


def state_machine_name(stack: cdk.Stack, size: int, probe: Probe) -> str:
    definition = '{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}'
    sfn.CfnStateMachine(
        stack,
        "Named",
        role_arn=ROLE_ARN,
        definition_string=definition,
        state_machine_name="m" * size,
    )
    return f"{STACK}/Named"


def role_name(stack: cdk.Stack, size: int, probe: Probe) -> str:
    iam.CfnRole(stack, "NamedRole", assume_role_policy_document=ASSUME, role_name="r" * size)
    return f"{STACK}/NamedRole"


def role_path(stack: cdk.Stack, size: int, probe: Probe) -> str:
    path = "/" + "p" * (size - 2) + "/"
    iam.CfnRole(stack, "PathRole", assume_role_policy_document=ASSUME, path=path)
    return f"{STACK}/PathRole"


def function_name(stack: cdk.Stack, size: int, probe: Probe) -> str:
    function(stack, "Named", function_name="f" * size)
    return f"{STACK}/Named"


def log_group_name(stack: cdk.Stack, size: int, probe: Probe) -> str:
    logs.CfnLogGroup(stack, "Logs", log_group_name="/" + "l" * (size - 1))
    return f"{STACK}/Logs"


def training_job_name(stack: cdk.Stack, size: int, probe: Probe) -> str:
    """The library's own definitions build job names at run time (the prefix plus a suffix) and
    its prefixes are validated when the job is created; a user's state machine can write one."""
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::sagemaker:createTrainingJob.sync",
        "Parameters": {"TrainingJobName": "t" * size},
        "End": True,
    }
    definition = json.dumps({"StartAt": "Train", "States": {"Train": task}})
    sfn.CfnStateMachine(stack, "Literal", role_arn=ROLE_ARN, definition_string=definition)
    return f"{STACK}/Literal"


def dashboard_widgets(stack: cdk.Stack, size: int, probe: Probe) -> str:
    widget = {"type": "text", "x": 0, "y": 0, "width": 1, "height": 1, "properties": {}}
    body = {"widgets": [widget] * size}
    cloudwatch.CfnDashboard(stack, "Board", dashboard_body=json.dumps(body))
    return f"{STACK}/Board"


@dataclass(frozen=True)
class Case:
    rule: str
    limit: int
    unit: str
    build: Callable[[cdk.Stack, int, Probe], str]
    context: dict[str, Any] = field(default_factory=dict)
    raised: dict[str, int] = field(default_factory=dict)  # enable_deployability_checks(...)

    @property
    def id(self) -> str:
        return self.rule + "".join(f"-{key}={value}" for key, value in self.raised.items())


CHARACTERS = "non-whitespace characters"
CASES = [
    Case("DEPLOY-ROLE-INLINE-POLICIES", 10_240, CHARACTERS, role_inline_policies),
    Case("DEPLOY-MANAGED-POLICY-SIZE", 6_144, CHARACTERS, managed_policy_size),
    Case("DEPLOY-ROLE-MANAGED-POLICIES", 10, "managed policies", role_managed_policies),
    Case(
        "DEPLOY-ROLE-MANAGED-POLICIES",
        20,
        "managed policies",
        role_managed_policies,
        raised={"managed_policies_per_role": 20},
    ),
    Case(
        "DEPLOY-STACK-RESOURCES", 500, "resources", stack_resources, context=NO_CDK_RESOURCE_LIMIT
    ),
    Case("DEPLOY-TEMPLATE-SIZE", 1_000_000, "bytes", template_size),
    Case("DEPLOY-STATE-MACHINE-DEFINITION-SIZE", 1_048_576, "bytes", state_machine_definition),
    Case("DEPLOY-EVENT-PATTERN-SIZE", 2_048, "characters", event_pattern),
    Case(
        "DEPLOY-EVENT-PATTERN-SIZE",
        4_096,
        "characters",
        event_pattern,
        raised={"event_pattern_limit": 4_096},
    ),
    Case("DEPLOY-LAMBDA-ENVIRONMENT-SIZE", 4_096, "bytes", lambda_environment),
    Case("DEPLOY-DASHBOARD-BODY", 500, "widgets", dashboard_widgets),
    Case("DEPLOY-STATE-MACHINE-NAME", 80, "characters", state_machine_name),
    Case("DEPLOY-ROLE-NAME", 64, "characters", role_name),
    Case("DEPLOY-ROLE-PATH", 512, "characters", role_path),
    Case("DEPLOY-FUNCTION-NAME", 64, "characters", function_name),
    Case("DEPLOY-LOG-GROUP-NAME", 512, "characters", log_group_name),
    Case("DEPLOY-TRAINING-JOB-NAME", 63, "characters", training_job_name),
]


def test_every_quota_the_plugin_checks_has_a_synth_case() -> None:
    assert sorted({case.rule for case in CASES}) == sorted(q.id for q in QUOTAS)


def plugin_reports(outdir: Path) -> list[dict[str, Any]]:
    report = outdir / "validation-report.json"
    if not report.exists():
        return []
    reports = json.loads(report.read_text())["pluginReports"]
    return [r for r in reports if r["pluginName"] == PLUGIN_NAME]


def measured_at(
    artifact: cx_api.CloudFormationStackArtifact, rule: str, path: str, unit: str
) -> list[int]:
    """The rule's measurements in ``unit`` of the synthesized template at ``path`` (as the
    plugin sees it)."""
    template_file = Path(artifact.template_full_path)
    text = template_file.read_text(encoding="utf-8")
    stack = StackTemplate(
        json.loads(text),
        path=STACK,
        size_bytes=len(text.encode()),
        known=KnownValues(region=REGION, stack_name=STACK),
    )
    return [
        m.measured
        for m in measure_template(stack)
        if m.quota == rule and m.construct_path == path and m.unit == unit and not m.estimated
    ]


@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "one-over"])
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_synth_at_and_over_the_limit(case: Case, over: int, probe: Probe, tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path), context={**PATH_METADATA, **case.context})
    stack = job_stack(app)
    if case.raised:
        enable_deployability_checks(stack, **case.raised)
    size = case.limit + over
    path = case.build(stack, size, probe)
    if not over:
        artifact = app.synth().get_stack_by_name(STACK)
        assert plugin_reports(tmp_path) == []
        # Just under means at the limit exactly: the case sized what it meant to size.
        assert measured_at(artifact, case.rule, path, case.unit) == [case.limit]
        return
    with pytest.raises(RuntimeError, match="ValidationFailed") as raised:
        app.synth()
    message = str(raised.value)
    assert f"[{case.rule}]" in message
    assert f"Measured: {size:,} {case.unit}; limit: {case.limit:,} {case.unit}." in message
    assert path in message
    (report,) = plugin_reports(tmp_path)
    assert report["conclusion"] == "failure"
    (violation,) = report["violations"]  # this quota, and no other
    assert violation["ruleName"] == case.rule
    assert violation["ruleMetadata"] == {
        "measured": str(size),
        "limit": str(case.limit),
        "unit": case.unit,
        "estimated": "false",
    }
    (construct,) = violation["violatingConstructs"]
    assert construct["constructPath"] == path
