"""The deployability plugin wired into real apps: synth fails over a quota and passes under it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from constructs import Construct

from hetero_constructs.deployability import plugin as deployability
from hetero_constructs.deployability.catalogue import QUOTAS
from hetero_constructs.deployability.plugin import (
    DISABLE_CONTEXT_KEY,
    PLUGIN_NAME,
    DeployabilityChecks,
    enable_deployability_checks,
)

ROOT = Path(__file__).resolve().parents[2]
CDK_CLI = ROOT / "node_modules" / ".bin" / "cdk"
if not CDK_CLI.exists():  # a worktree: the CLI is installed in the main checkout
    CDK_CLI = Path("/work/main/node_modules/.bin/cdk")


def role_with_policy(app: cdk.App, stack_id: str, characters: int) -> cdk.Stack:
    """A stack whose role carries one inline policy of exactly ``characters`` (name included)."""
    stack = cdk.Stack(app, stack_id)
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": ""}
    document = {"Version": "2012-10-17", "Statement": [statement]}
    empty = len(json.dumps(document, separators=(",", ":"))) + len("P")
    statement["Resource"] = "arn:aws:s3:::" + "b" * (characters - empty - len("arn:aws:s3:::"))
    iam.CfnPolicy(
        stack, "Policy", policy_name="P", roles=[role.role_name], policy_document=document
    )
    return stack


def report(outdir: Path) -> list[dict[str, Any]]:
    return json.loads((outdir / "validation-report.json").read_text())["pluginReports"]  # type: ignore[no-any-return]


def test_synth_passes_at_the_limit(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path))
    stack = role_with_policy(app, "AtTheLimit", 10_240)
    enable_deployability_checks(stack)
    app.synth()
    assert [r for r in report(tmp_path) if r["pluginName"] == PLUGIN_NAME] == []


def test_synth_fails_over_the_limit_with_rule_path_size_limit_and_fix(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path))
    role_with_policy(app, "Under", 10_240)
    over = role_with_policy(app, "Over", 10_241)
    enable_deployability_checks(over)
    enable_deployability_checks(app)  # idempotent: one plugin, one report
    with pytest.raises(RuntimeError) as raised:
        app.synth()
    message = str(raised.value)
    assert "DEPLOY-ROLE-INLINE-POLICIES" in message
    assert "Over/Role/Resource" in message and "Under/" not in message
    assert "Measured: 10,241 non-whitespace characters; limit: 10,240" in message
    assert "split the jobs (or resources) that share this role" in message
    (plugin_report,) = report(tmp_path)
    assert plugin_report["pluginName"] == PLUGIN_NAME
    assert plugin_report["conclusion"] == "failure"
    (violation,) = plugin_report["violations"]
    assert violation["ruleName"] == "DEPLOY-ROLE-INLINE-POLICIES"
    assert violation["ruleMetadata"] == {
        "measured": "10241",
        "limit": "10240",
        "unit": "non-whitespace characters",
        "estimated": "false",
    }
    (construct,) = violation["violatingConstructs"]
    assert construct["constructPath"] == "Over/Role/Resource"
    assert construct["cloudFormationResource"]["propertyPaths"] == ["Properties/Policies"]


@dataclass
class _Context:
    """What the plugin reads of IPolicyValidationContext, for calls without a synth."""

    app_construct: Construct
    stack_templates: list[Any] = field(default_factory=list)


@dataclass
class _StackTemplate:
    stack_construct_path: str
    template_path: str
    account_id: str | None = None
    region: str | None = None


def test_plugin_reads_stack_names_from_the_manifest_and_can_be_turned_off(
    tmp_path: Path,
) -> None:
    template = {
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "RoleName": {"Fn::Join": ["-", [{"Ref": "AWS::StackName"}, "x" * 60]]}
                },
            }
        }
    }
    (tmp_path / "Id.template.json").write_text(json.dumps(template))
    manifest = {
        "artifacts": {
            "Id": {
                "type": "aws:cloudformation:stack",
                "properties": {"templateFile": "Id.template.json", "stackName": "abc"},
            }
        }
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    stacks = [_StackTemplate("Id", str(tmp_path / "Id.template.json"))]
    plugin = DeployabilityChecks()
    fits = plugin.validate(_Context(cdk.App(), stacks))  # type: ignore[arg-type]
    assert fits.success  # "abc-" + 60 characters: 64
    manifest["artifacts"]["Id"]["properties"]["stackName"] = "abcd"
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    too_long = plugin.validate(_Context(cdk.App(), stacks))  # type: ignore[arg-type]
    assert [v.rule_name for v in too_long.violations] == ["DEPLOY-ROLE-NAME"]
    off = cdk.App(context={DISABLE_CONTEXT_KEY: False})
    assert plugin.validate(_Context(off, stacks)).success  # type: ignore[arg-type]
    assert plugin.name == PLUGIN_NAME and plugin.rule_ids == [q.id for q in QUOTAS]


def test_one_plugin_per_app_with_the_largest_declared_limits() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S")
    enable_deployability_checks(stack)
    enable_deployability_checks(app, event_pattern_limit=4_096)
    enable_deployability_checks(stack, managed_policies_per_role=20)
    enable_deployability_checks(stack)
    plugin = deployability._PLUGINS[app]
    assert (plugin.limits.event_pattern_size, plugin.limits.managed_policies_per_role) == (
        4_096,
        20,
    )
    other = cdk.App()
    enable_deployability_checks(other)
    assert deployability._PLUGINS[other] is not plugin
    with pytest.raises(ValueError, match="event_pattern_size 9000"):
        enable_deployability_checks(app, event_pattern_limit=9_000)


@pytest.mark.skipif(not CDK_CLI.exists(), reason="the CDK CLI is not installed (npm ci)")
def test_cdk_synth_exits_1_over_a_quota(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(ROOT)!r})
            import aws_cdk as cdk
            from aws_cdk import aws_iam as iam
            from hetero_constructs.deployability.plugin import enable_deployability_checks

            app = cdk.App()
            stack = cdk.Stack(app, "Over")
            role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
            statement = {{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*" * 10_240}}
            document = {{"Version": "2012-10-17", "Statement": [statement]}}
            iam.CfnPolicy(stack, "Policy", policy_name="P", roles=[role.role_name],
                          policy_document=document)
            enable_deployability_checks(stack)
            app.synth()
            """
        )
    )
    (tmp_path / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} app.py"}))
    node = Path(os.environ.get("JSII_NODE", shutil.which("node") or "node")).parent
    environment = {
        **os.environ,
        "PATH": f"{node}{os.pathsep}{os.environ['PATH']}",
        "CDK_DISABLE_CLI_TELEMETRY": "1",
    }
    environment.pop("PYTEST_CURRENT_TEST", None)
    environment.pop("PYTEST_VERSION", None)
    done = subprocess.run(
        [str(CDK_CLI), "synth", "--quiet"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "Over/Role/Resource" in output
    assert f"{PLUGIN_NAME}::DEPLOY-ROLE-INLINE-POLICIES" in output
