"""What a training task makes of its inputs before planning: a spec file with fields given in
Python set over it, the wait's timeout, KMS keys, the region, and the region's DLC image."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from typing import Any

from aws_cdk import Aws, Duration, Stack, Token
from aws_cdk import aws_kms as kms
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.region_info import FactName, RegionInfo

from hetero_constructs.checks.construct_rules import (
    BUILTIN_METRICS_RULE,
    REGION_RULE,
    TIMEOUT_TOKEN_RULE,
)
from hetero_constructs.constructs.tokens import is_token
from hetero_constructs.contract.metrics import metric_definitions
from hetero_constructs.request.context import Deployment, RuleContext
from hetero_constructs.request.image_uri import image_repository, image_tag
from hetero_constructs.service import catalog
from hetero_constructs.service import model as service_model
from hetero_constructs.spec.file.reader import read_spec_file
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError, Violation, did_you_mean

DEFAULT_COMPLETION_MARGIN_SECONDS = 6 * 3600


@functools.cache
def _region_facts(region: str) -> tuple[str | None, str | None]:
    """aws-cdk-lib's DLC account and domain suffix for a concrete region."""
    info = RegionInfo.get(region)
    return info.dlc_repository_account, info.domain_suffix


def spec_from_file(
    path: str | os.PathLike[str], spec_overrides: Mapping[str, Any] | None, where: str
) -> TrainingSpec:
    """A spec file, with ``spec_overrides`` (``TrainingSpec`` fields, e.g. values from the stack)
    set over the file's values; the spec is validated with every rule by the construct."""
    overrides = dict(spec_overrides or {})
    fields = sorted(field.name for field in dataclasses.fields(TrainingSpec))
    unknown = [key for key in overrides if key not in fields]
    if unknown:
        meant = did_you_mean(str(unknown[0]), fields)
        raise ValueError(
            f"{where}: spec_overrides has no TrainingSpec field {unknown[0]!r}. Allowed: "
            f"{', '.join(fields)}. Fix: "
            + (f"did you mean {meant!r}?" if meant else "remove it, or pass it as a prop")
        )
    reading = read_spec_file(path)
    if reading.spec is None or reading.violations:
        raise SpecValidationError(reading.violations, scope=where)
    try:
        return dataclasses.replace(reading.spec, **overrides)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: spec_overrides: {error}") from error


def completion_seconds(
    spec: TrainingSpec,
    margin: Duration | None,
    query_language: sfn.QueryLanguage | None,
    where: str,
) -> int | str:
    """The wait's timeout: the longest the job may take plus the margin.

    A deploy-time ``max_run`` keeps its margin through a JSONata expression; JSONPath has no
    arithmetic on the timeout, so there it is refused rather than silently losing the margin.
    """
    seconds = int(margin.to_seconds()) if margin else DEFAULT_COMPLETION_MARGIN_SECONDS
    longest: Any = spec.max_wait if spec.use_spot_instances and spec.max_wait else spec.max_run
    if not is_token(longest):
        return int(longest) + seconds
    if query_language != sfn.QueryLanguage.JSONATA:
        raise SpecValidationError(
            [
                Violation(
                    TIMEOUT_TOKEN_RULE,
                    "max_wait" if spec.use_spot_instances and spec.max_wait else "max_run",
                    "The maximum runtime is a deploy-time value: a JSONPath task cannot add "
                    "the completion margin to it.",
                    "a CDK token",
                    "a number, or a token with query_language=sfn.QueryLanguage.JSONATA",
                    "pass query_language=sfn.QueryLanguage.JSONATA (the timeout becomes a "
                    "JSONata expression), or a number",
                )
            ],
            scope=where,
        )
    return f"{{% {Token.as_string(longest)} + {seconds} %}}"


def with_keys(spec: TrainingSpec, volume: kms.IKey | None, output: kms.IKey | None) -> TrainingSpec:
    if volume is not None:
        spec = dataclasses.replace(spec, volume_kms_key=volume.key_arn)
    if output is not None:
        spec = dataclasses.replace(spec, output_kms_key=output.key_arn)
    return spec


def region_violations(spec: TrainingSpec, region: str) -> list[Violation]:
    """A spec naming another region than its stack's."""
    if spec.region is None or is_token(region) or spec.region == region:
        return []
    return [
        Violation(
            REGION_RULE,
            "region",
            "The spec names another region than its stack's.",
            spec.region,
            f"the stack's region, {region}",
            "remove region from the spec, or deploy the stack to that region",
        )
    ]


def with_builtin_metrics(spec: TrainingSpec) -> tuple[TrainingSpec, list[Violation]]:
    """The spec with the built-in metric definitions after its own (samples per second per
    group, the trainers' data wait, the data hosts' load), or, when the two lists do not fit
    the API together, the spec as it is and the violation that says so."""
    every = metric_definitions(spec)
    most = service_model.bounds("AlgorithmSpecification.MetricDefinitions").maximum
    own = len(spec.metric_definitions)
    if most is None or len(every) <= most or own > most:  # too many of its own: API-METRICS
        return dataclasses.replace(spec, metric_definitions=tuple(every)), []
    return spec, [
        Violation(
            BUILTIN_METRICS_RULE,
            "metric_definitions",
            f"The spec's {own} metric definitions and the {len(every) - own} built-in ones "
            f"(samples per second per instance group, the trainers' data wait, the data "
            f"hosts' load) are "
            f"{len(every)}; the CreateTrainingJob API takes at most {most}.",
            own,
            f"at most {most - (len(every) - own)} metric definitions of the spec's own",
            "remove some of the spec's metric_definitions, or pass builtin_metrics=False "
            "(the dashboard then shows no samples per second and no data wait)",
        )
    ]


def region_dlc_image(
    spec: TrainingSpec, region: str, stack: Stack
) -> tuple[str | None, str | None]:
    """The region's Deep Learning Container and its account, from aws-cdk-lib's facts."""
    context = RuleContext(spec, Deployment(region=region), is_token)
    if spec.framework_version is None or spec.py_version is None:
        return None, None
    account: str | None
    if is_token(region):
        account = stack.regional_fact(FactName.DLC_REPOSITORY_ACCOUNT)
        suffix = Aws.URL_SUFFIX
    else:
        fact_account, fact_suffix = _region_facts(region)
        account = fact_account or catalog.DLC_ACCOUNTS.get(region)
        suffix = fact_suffix or "amazonaws.com"
        if account is None:
            return None, None  # FW-REGION explains
    uri = f"{account}.dkr.ecr.{region}.{suffix}/{image_repository(context)}:{image_tag(context)}"
    return uri, account


__all__ = [
    "DEFAULT_COMPLETION_MARGIN_SECONDS",
    "completion_seconds",
    "region_dlc_image",
    "region_violations",
    "spec_from_file",
    "with_builtin_metrics",
    "with_keys",
]
