"""Deployability checks at synth: the quotas of ``quotas`` as a CDK policy-validation plugin.

``enable_deployability_checks(scope)`` registers one ``DeployabilityChecks`` plugin on the
app (``Validations.of(app).add_plugins``, as cdk-nag 3 registers its packs). CDK runs it on
every synthesized template after synthesis; a quota a template would exceed at deploy is a
violation with the rule id, the construct path, the measured size and the limit, and the fix,
and it fails ``app.synth()`` and ``cdk synth`` (exit code 1), with the report in
``cdk.out/validation-report.json``.

An app that must synthesize beyond the quotas anyway (a benchmark measuring them) turns the
checks off with the context value ``hetero-constructs:deployabilityChecks: false``; a single
finding can be acknowledged like any plugin's (``Validations.of(construct).acknowledge(
Acknowledgment("hetero-constructs-deployability::DEPLOY-...", reason))``), though a quota a
template exceeds still fails its deploy.
"""

from __future__ import annotations

import functools
import json
import weakref
from importlib import metadata
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
    Validations,
)
from constructs import IConstruct

from hetero_constructs.deployability.catalogue import DEFAULT_LIMITS, QUOTAS, check_template
from hetero_constructs.deployability.deploy_time import KnownValues
from hetero_constructs.deployability.quota import Limits, Measurement, StackTemplate

PLUGIN_NAME = "hetero-constructs-deployability"
DISABLE_CONTEXT_KEY = "hetero-constructs:deployabilityChecks"


@functools.cache
def _version() -> str:
    try:
        return metadata.version("hetero-constructs")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout, not installed
        return "0.0.0"


def _stack_names(assembly_dir: Path) -> dict[str, str]:
    """Template file name -> stack name, from the cloud assembly's manifest."""
    manifest_file = assembly_dir / "manifest.json"
    if not manifest_file.is_file():
        return {}
    manifest = json.loads(manifest_file.read_text())
    names = {}
    for artifact_id, artifact in (manifest.get("artifacts") or {}).items():
        properties = artifact.get("properties") or {}
        if artifact.get("type") == "aws:cloudformation:stack" and "templateFile" in properties:
            names[properties["templateFile"]] = properties.get("stackName", artifact_id)
    return names


def _is_off(app: IConstruct) -> bool:
    return app.node.try_get_context(DISABLE_CONTEXT_KEY) in (False, "false")


@jsii.implements(IPolicyValidationPlugin)
class DeployabilityChecks:
    """The AWS quotas of ``deployability.catalogue``, checked on every synthesized template.

    Register it with ``enable_deployability_checks`` (once per app), or yourself with
    ``Validations.of(stage).add_plugins(DeployabilityChecks())`` for one stage's stacks.
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    @property
    def name(self) -> str:
        return PLUGIN_NAME

    @property
    def version(self) -> str:
        return _version()

    @property
    def rule_ids(self) -> list[str]:
        return [registered.id for registered in QUOTAS]

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        if _is_off(context.app_construct):
            return PolicyValidationPluginReport(success=True, violations=[])
        violations: list[PolicyViolation] = []
        names: dict[Path, dict[str, str]] = {}
        for stack in context.stack_templates:
            template_file = Path(stack.template_path)
            if template_file.parent not in names:
                names[template_file.parent] = _stack_names(template_file.parent)
            text = template_file.read_text(encoding="utf-8")
            template = json.loads(text)
            known = KnownValues(
                account=stack.account_id,
                region=stack.region,
                stack_name=names[template_file.parent].get(template_file.name),
            )
            measured = StackTemplate(
                template,
                path=stack.stack_construct_path,
                size_bytes=len(text.encode()),
                known=known,
            )
            violations.extend(
                self._violation(found, template, str(template_file), stack.stack_construct_path)
                for found in check_template(measured, self.limits)
            )
        return PolicyValidationPluginReport(success=not violations, violations=violations)

    @staticmethod
    def _violation(
        found: Measurement, template: dict[str, Any], template_path: str, stack_path: str
    ) -> PolicyViolation:
        if found.logical_id is None:
            resource = PolicyViolatingResource(
                locations=[found.location], construct_path=stack_path, template_path=template_path
            )
        else:
            metadata_path = (
                (template.get("Resources", {}).get(found.logical_id) or {}).get("Metadata") or {}
            ).get("aws:cdk:path")
            # Without path metadata (an in-process App), CDK finds the path by logical id.
            resource = PolicyViolatingResource(
                locations=[found.location],
                resource_logical_id=found.logical_id,
                template_path=template_path,
                construct_path=metadata_path if isinstance(metadata_path, str) else None,
            )
        estimate = " (worst case for values resolved at deploy time)" if found.estimated else ""
        return PolicyViolation(
            rule_name=found.quota,
            description=(
                f"[{found.quota}] {found.problem} "
                f"Measured: {found.measured:,} {found.unit}{estimate}; "
                f"limit: {found.limit:,} {found.unit}."
            ),
            fix=found.fix,
            severity="error",
            violating_resources=[resource],
            rule_metadata={
                "measured": str(found.measured),
                "limit": str(found.limit),
                "unit": found.unit,
                "estimated": "true" if found.estimated else "false",
            },
        )


# One plugin per app: the runner of every stack calls enable_deployability_checks.
_PLUGINS: weakref.WeakKeyDictionary[Any, DeployabilityChecks] = weakref.WeakKeyDictionary()


def enable_deployability_checks(
    scope: IConstruct,
    *,
    event_pattern_limit: int = DEFAULT_LIMITS.event_pattern_size,
    managed_policies_per_role: int = DEFAULT_LIMITS.managed_policies_per_role,
) -> None:
    """Check every stack of ``scope``'s app against the AWS quotas at synth (once per app).

    :param scope: any construct of the app.
    :param event_pattern_limit: the account's EventBridge 'Event pattern size' quota (2,048
        by default, up to 4,096 after a quota increase).
    :param managed_policies_per_role: the account's IAM 'Managed policies per role' quota.

    Calling it again for the same app adds nothing; the limits become the larger of what the
    calls declared (a quota increase applies to the whole account, and the library's own call
    passes the defaults).
    """
    limits = Limits(event_pattern_limit, managed_policies_per_role)
    root = scope.node.root
    plugin = _PLUGINS.get(root)
    if plugin is not None:
        plugin.limits = Limits(
            max(plugin.limits.event_pattern_size, limits.event_pattern_size),
            max(plugin.limits.managed_policies_per_role, limits.managed_policies_per_role),
        )
        return
    plugin = DeployabilityChecks(limits)
    Validations.of(root).add_plugins(plugin)
    _PLUGINS[root] = plugin


__all__ = [
    "DISABLE_CONTEXT_KEY",
    "PLUGIN_NAME",
    "DeployabilityChecks",
    "enable_deployability_checks",
]
