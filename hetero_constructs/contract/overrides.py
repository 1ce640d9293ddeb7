"""Execution-input overrides: what a state-machine execution may change in the synthesized spec.

Schema (every key optional, nothing else allowed)::

    {
      "hyperparameters": {"epochs": 5},          # merged over the spec's hyperparameters
      "channels": {"train": "s3://bucket/v2/"},  # new S3 URIs for channels the spec declares
      "job_name_prefix": "nightly",              # replaces the job name prefix
      "tags": {"run": "42"}                      # merged over the spec's tags
    }

Overrides cannot reach beyond what the spec was granted: a channel moves only to an ``s3://``
location under a prefix the execution role can read, at a path boundary. Keys Step Functions
adds itself (``AWS_STEP_FUNCTIONS_*``) are ignored. The result is validated again with every
rule, exactly as at synth time.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hetero_constructs.service import model as service_model
from hetero_constructs.spec.fields import json_value_problem
from hetero_constructs.spec.rule_registry import EXECUTION_INPUT, register_rule
from hetero_constructs.spec.s3_uri import S3Uri, covers, has_dot_segment
from hetero_constructs.spec.violations import (
    Violation,
    bounded,
    shorten,
    unknown_key_fix,
)

OVERRIDE_KEYS = ("hyperparameters", "channels", "job_name_prefix", "tags")
# Keys Step Functions adds to an execution's input itself, e.g.
# AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID for a child execution: not overrides.
STEP_FUNCTIONS_KEY_PREFIX = "AWS_STEP_FUNCTIONS_"


_AGAIN = "Every rule of the spec applies again to the spec with the overrides merged in."
UNKNOWN_KEY_RULE = register_rule(
    "OVERRIDE-UNKNOWN-KEY",
    group=EXECUTION_INPUT,
    title="The execution input has only the keys "
    + ", ".join(f"`{key}`" for key in OVERRIDE_KEYS)
    + f" (keys Step Functions adds, `{STEP_FUNCTIONS_KEY_PREFIX}*`, are ignored).",
    details=_AGAIN,
    source="this library",
)
TYPE_RULE = register_rule(
    "OVERRIDE-TYPE",
    group=EXECUTION_INPUT,
    title="Each override has its type: maps for hyperparameters, channels and tags, "
    "a string for the prefix; channel URIs and tag values are strings.",
    details=_AGAIN,
    source="this library",
)
CHANNEL_RULE = register_rule(
    "OVERRIDE-CHANNEL",
    group=EXECUTION_INPUT,
    title="Channel overrides name channels the spec declares (they replace the S3 "
    "URI only; group scoping stays as synthesized).",
    details=_AGAIN,
    source="this library",
)
CHANNEL_PREFIX_RULE = register_rule(
    "OVERRIDE-CHANNEL-PREFIX",
    group=EXECUTION_INPUT,
    title="A channel override is an `s3://` URI under a prefix the execution role was granted "
    "at synth (the spec's channels), at a path boundary: `s3://b/train` covers "
    "`s3://b/train/v2/`, never `s3://b/train-nightly/`; no `.` or `..` segments.",
    details=_AGAIN,
    source="this library",
)
VALUE_RULE = register_rule(
    "OVERRIDE-VALUE",
    group=EXECUTION_INPUT,
    title="Override values fit the CreateTrainingJob API's own pattern and length (botocore's "
    "model): tag keys and values (no newline or tab), the job name prefix (TrainingJobName), "
    "channel URIs (S3Uri).",
    details=_AGAIN,
    source="botocore model",
)


@dataclass(frozen=True)
class Overridden:
    spec: dict[str, Any]
    job_name_prefix: str | None
    violations: tuple[Violation, ...]


def _violation(rule: str, path: str, problem: str, value: Any, allowed: str, fix: str) -> Violation:
    return Violation(
        rule, f"execution input.{path}" if path else "execution input", problem, value, allowed, fix
    )


def _key(key: Any) -> str:
    """A key of the input as it appears in a path (cut when very long)."""
    return shorten(key if isinstance(key, str) else repr(key), 64)


def apply_overrides(
    spec: Mapping[str, Any],
    overrides: Any,
    *,
    channel_prefixes: Sequence[str] | None = None,
) -> Overridden:
    """The spec-file mapping with the overrides applied, or the overrides' violations.

    ``channel_prefixes`` are the S3 locations the execution role may read, as granted at synth;
    a channel override must lie under one of them. ``None`` takes the spec's own channel URIs.
    The violations are bounded (``violations.bounded``): at most ``MAX_REPORTED_VIOLATIONS``
    and one saying how many more, whatever the size of the input.
    """
    result = copy.deepcopy(dict(spec))
    if overrides is None:
        return Overridden(result, None, ())
    if not isinstance(overrides, Mapping):
        return Overridden(
            result,
            None,
            (
                _violation(
                    TYPE_RULE,
                    "",
                    "The execution input is not a JSON object.",
                    overrides,
                    "an object with " + ", ".join(OVERRIDE_KEYS),
                    "start the execution with {} or an object",
                ),
            ),
        )
    violations: list[Violation] = []
    for key in overrides:
        if key in OVERRIDE_KEYS:
            continue
        if isinstance(key, str) and key.startswith(STEP_FUNCTIONS_KEY_PREFIX):
            continue  # added by Step Functions, not by whoever started the execution
        violations.append(
            _violation(
                UNKNOWN_KEY_RULE,
                _key(key),
                "This key cannot be overridden.",
                key,
                ", ".join(OVERRIDE_KEYS),
                unknown_key_fix(key, OVERRIDE_KEYS) if isinstance(key, str) else "remove it",
            )
        )
    if "hyperparameters" in overrides:
        _merge_hyperparameters(result, overrides["hyperparameters"], violations)
    if "tags" in overrides:
        _merge_tags(result, overrides["tags"], violations)
    if "channels" in overrides:
        granted = _granted(result, channel_prefixes)
        _override_channels(result, overrides["channels"], granted, violations)
    prefix = _prefix(overrides.get("job_name_prefix"), violations)
    return Overridden(result, prefix, bounded(violations, path="execution input"))


def _type_violation(name: str, value: Any, allowed: str) -> Violation:
    return _violation(
        TYPE_RULE,
        name,
        f"The {name} override has the wrong type.",
        value,
        allowed,
        f"give {name} as {allowed}",
    )


def _merge_hyperparameters(result: dict[str, Any], value: Any, violations: list[Violation]) -> None:
    """Hyperparameter values are checked as the spec's are, once merged (API-HYPERPARAMETERS)."""
    allowed = "a map of JSON values"
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        violations.append(_type_violation("hyperparameters", value, allowed))
        return
    bad = [(k, problem) for k, v in value.items() if (problem := json_value_problem(v))]
    for key, problem in bad:
        violations.append(
            _violation(
                TYPE_RULE,
                f"hyperparameters.{_key(key)}{problem.path}",
                "A hyperparameter override is not a JSON value the spec takes.",
                problem.value,
                problem.allowed,
                "give a string, number, boolean, list or map",
            )
        )
    if not bad:
        result["hyperparameters"] = {**result.get("hyperparameters", {}), **value}


def _merge_tags(result: dict[str, Any], value: Any, violations: list[Violation]) -> None:
    allowed = "a map of strings"
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        violations.append(_type_violation("tags", value, allowed))
        return
    before = len(violations)
    for key, tag in value.items():
        violations.extend(_model_value(f"tags.{_key(key)}", key, "Tags[].Key", "tag key"))
        violations.extend(_model_value(f"tags.{_key(key)}", tag, "Tags[].Value", "tag value"))
    if len(violations) == before:
        result["tags"] = {**_tag_map(result.get("tags")), **value}


def _tag_map(tags: Any) -> dict[Any, Any]:
    """The spec's tags as a map (a spec file may give them in the SDK's list form)."""
    if isinstance(tags, list):
        return {t.get("Key"): t.get("Value") for t in tags if isinstance(t, Mapping)}
    return dict(tags) if isinstance(tags, Mapping) else {}


def _model_value(path: str, value: str, model_path: str, what: str) -> list[Violation]:
    """``value`` against the length and pattern botocore's model gives ``model_path``."""
    if service_model.matches(model_path, value):
        return []
    limits = service_model.bounds(model_path)
    allowed = limits.describe_length()
    if limits.pattern and limits.pattern not in (".*", ".+"):
        allowed += f" matching /{limits.pattern}/"
    return [
        _violation(
            VALUE_RULE,
            path,
            f"The {what} does not fit the CreateTrainingJob API ({model_path}).",
            value,
            allowed,
            f"give a {what} of {allowed}",
        )
    ]


def _granted(spec: Mapping[str, Any], channel_prefixes: Sequence[str] | None) -> list[S3Uri]:
    """The readable prefixes: those given, or the spec's own channel URIs."""
    if channel_prefixes is None:
        channels = spec.get("channels")
        channel_prefixes = list(_channel_uris(channels)) if isinstance(channels, Mapping) else []
    return [uri for uri in map(S3Uri.parse, channel_prefixes) if uri is not None]


def _channel_uris(channels: Mapping[str, Any]) -> Iterable[str]:
    for channel in channels.values():
        if isinstance(channel, str):
            yield channel
        elif isinstance(channel, Mapping):
            uri = channel.get("s3_uri", channel.get("s3_data"))
            if isinstance(uri, str):
                yield uri


def _override_channels(
    result: dict[str, Any], value: Any, granted: list[S3Uri], violations: list[Violation]
) -> None:
    if not isinstance(value, Mapping):
        violations.append(
            _violation(
                TYPE_RULE,
                "channels",
                "The channels override is not a map.",
                value,
                "a map of channel name to S3 URI",
                'give channels as {"train": "s3://bucket/prefix/"}',
            )
        )
        return
    channels = result.setdefault("channels", {})
    for name, uri in value.items():
        path = f"channels.{_key(name)}"
        if name not in channels:
            violations.append(
                _violation(
                    CHANNEL_RULE,
                    path,
                    "The spec declares no such channel.",
                    name,
                    _listed(channels) or "no channels",
                    unknown_key_fix(name, channels) if isinstance(name, str) else "remove it",
                )
            )
        elif not isinstance(uri, str):
            violations.append(
                _violation(
                    TYPE_RULE,
                    path,
                    "A channel override is an S3 URI string.",
                    uri,
                    "an s3:// URI",
                    "give the channel's new S3 URI",
                )
            )
        else:
            problems = _channel_uri_violations(path, uri, granted)
            violations.extend(problems)
            if problems:
                continue
            channel = channels[name]
            if isinstance(channel, Mapping):
                channels[name] = {**channel, "s3_uri": uri}
                channels[name].pop("s3_data", None)
            else:
                channels[name] = uri


def _channel_uri_violations(path: str, uri: str, granted: list[S3Uri]) -> list[Violation]:
    location = S3Uri.parse(uri)
    if (
        location is not None
        and not has_dot_segment(location.key)
        and any(covers(prefix, location) for prefix in granted)
    ):
        # Under a granted prefix; the API still bounds the URI's length.
        return _model_value(path, uri, "InputDataConfig[].DataSource.S3DataSource.S3Uri", "S3 URI")
    return [
        _violation(
            CHANNEL_PREFIX_RULE,
            path,
            "The execution role may not read this location: a channel override must lie under "
            "a prefix granted at synth.",
            uri,
            "s3:// URIs under " + (_listed(str(g) for g in granted) or "no granted prefix"),
            "use a location under a granted prefix, or declare the channel there in the spec",
        )
    ]


def _listed(items: Iterable[Any], limit: int = 3) -> str:
    """At most ``limit`` items, each cut to 60 characters, and how many more there are."""
    listed = [shorten(str(item), 60) for item in items]
    text = ", ".join(listed[:limit])
    if len(listed) > limit:
        text += f" and {len(listed) - limit} more"
    return text


def _prefix(prefix: Any, violations: list[Violation]) -> str | None:
    if prefix is None:
        return None
    if not isinstance(prefix, str):
        violations.append(
            _violation(
                TYPE_RULE,
                "job_name_prefix",
                "The prefix is not a string.",
                prefix,
                "a string",
                "give job_name_prefix as a string",
            )
        )
        return None
    problems = _model_value("job_name_prefix", prefix, "TrainingJobName", "job name prefix")
    violations.extend(problems)
    return None if problems else prefix


__all__ = [
    "CHANNEL_PREFIX_RULE",
    "CHANNEL_RULE",
    "OVERRIDE_KEYS",
    "STEP_FUNCTIONS_KEY_PREFIX",
    "TYPE_RULE",
    "UNKNOWN_KEY_RULE",
    "VALUE_RULE",
    "Overridden",
    "apply_overrides",
]
