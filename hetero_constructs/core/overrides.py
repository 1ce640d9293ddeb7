"""Execution-input overrides: what a state-machine execution may change in the synthesized spec.

Schema (every key optional, nothing else allowed)::

    {
      "hyperparameters": {"epochs": 5},          # merged over the spec's hyperparameters
      "channels": {"train": "s3://bucket/v2/"},  # new S3 URIs for channels the spec declares
      "job_name_prefix": "nightly",              # replaces the job name prefix
      "tags": {"run": "42"}                      # merged over the spec's tags
    }

The result is validated again with every rule, exactly as at synth time.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hetero_constructs.core.fieldcheck import is_json_value
from hetero_constructs.core.violations import Violation

OVERRIDE_KEYS = ("hyperparameters", "channels", "job_name_prefix", "tags")

OVERRIDE_RULES = (
    (
        "OVERRIDE-UNKNOWN-KEY",
        "The execution input has only the keys "
        "`hyperparameters`, `channels`, `job_name_prefix`, `tags`.",
    ),
    (
        "OVERRIDE-TYPE",
        "Each override has its type: maps for hyperparameters, channels and tags, "
        "a string for the prefix; channel URIs and tag values are strings.",
    ),
    (
        "OVERRIDE-CHANNEL",
        "Channel overrides name channels the spec declares (they replace the S3 "
        "URI only; group scoping stays as synthesized).",
    ),
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


def apply_overrides(spec: Mapping[str, Any], overrides: Any) -> Overridden:
    """The spec-file mapping with the overrides applied, or the overrides' violations."""
    result = copy.deepcopy(dict(spec))
    if overrides is None:
        return Overridden(result, None, ())
    if not isinstance(overrides, Mapping):
        return Overridden(
            result,
            None,
            (
                _violation(
                    "OVERRIDE-TYPE",
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
        if key not in OVERRIDE_KEYS:
            violations.append(
                _violation(
                    "OVERRIDE-UNKNOWN-KEY",
                    str(key),
                    "This key cannot be overridden.",
                    key,
                    ", ".join(OVERRIDE_KEYS),
                    "remove it from the execution input",
                )
            )
    for name in ("hyperparameters", "tags"):
        if name in overrides:
            _merge_map(result, name, overrides[name], violations, strings=name == "tags")
    if "channels" in overrides:
        _override_channels(result, overrides["channels"], violations)
    prefix = overrides.get("job_name_prefix")
    if prefix is not None and not isinstance(prefix, str):
        violations.append(
            _violation(
                "OVERRIDE-TYPE",
                "job_name_prefix",
                "The prefix is not a string.",
                prefix,
                "a string",
                "give job_name_prefix as a string",
            )
        )
        prefix = None
    return Overridden(result, prefix, tuple(violations))


def _merge_map(
    result: dict[str, Any], name: str, value: Any, violations: list[Violation], *, strings: bool
) -> None:
    ok = isinstance(value, Mapping) and all(
        isinstance(k, str) and (isinstance(v, str) if strings else is_json_value(v))
        for k, v in value.items()
    )
    if not ok:
        allowed = "a map of strings" if strings else "a map of JSON values"
        violations.append(
            _violation(
                "OVERRIDE-TYPE",
                name,
                f"The {name} override has the wrong type.",
                value,
                allowed,
                f"give {name} as {allowed}",
            )
        )
        return
    result[name] = {**result.get(name, {}), **value}


def _override_channels(result: dict[str, Any], value: Any, violations: list[Violation]) -> None:
    if not isinstance(value, Mapping):
        violations.append(
            _violation(
                "OVERRIDE-TYPE",
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
        if name not in channels:
            violations.append(
                _violation(
                    "OVERRIDE-CHANNEL",
                    f"channels.{name}",
                    "The spec declares no such channel.",
                    name,
                    ", ".join(channels) or "no channels",
                    "override a declared channel",
                )
            )
        elif not isinstance(uri, str):
            violations.append(
                _violation(
                    "OVERRIDE-TYPE",
                    f"channels.{name}",
                    "A channel override is an S3 URI string.",
                    uri,
                    "an s3:// URI",
                    "give the channel's new S3 URI",
                )
            )
        else:
            channel = channels[name]
            if isinstance(channel, Mapping):
                channels[name] = {**channel, "s3_uri": uri}
                channels[name].pop("s3_data", None)
            else:
                channels[name] = uri
