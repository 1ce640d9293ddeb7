"""The SDK's ``distribution`` dict (and ``smddp_collective``) as a ``DistributedTraining``.

Exactly the dict the SageMaker Python SDK takes, with group names as strings; unlike the SDK,
unknown keys and launchers without ``enabled`` are violations, not silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hetero_constructs.spec.distribution import (
    DistributedTraining,
    Launcher,
    LauncherConfig,
    SmddpCollective,
)
from hetero_constructs.spec.fields import (
    TYPE_RULE,
)
from hetero_constructs.spec.file.rules import LAUNCHER_ENABLED_RULE
from hetero_constructs.spec.file.walk import Reader
from hetero_constructs.spec.violations import (
    SpecValidationError,
    did_you_mean,
)

_LAUNCHER_KEYS = frozenset({"enabled", "processes_per_host", "custom_mpi_options"})


_DISTRIBUTION_KEYS = frozenset(
    {
        "torch_distributed",
        "pytorchddp",
        "smdistributed",
        "mpi",
        "parameter_server",
        "multi_worker_mirrored_strategy",
        "pytorchxla",
        "instance_groups",
    }
)


_SMDISTRIBUTED_KEYS = frozenset({"dataparallel", "modelparallel"})


_MODEL_PARALLEL_KEYS = frozenset({"enabled", "parameters"})


def _launcher(reader: Reader, path: str, kind: Launcher, raw: Any) -> LauncherConfig | None:
    options = reader.mapping(path, raw, _LAUNCHER_KEYS)
    if not isinstance(raw, Mapping):
        return None
    enabled = options.get("enabled")
    if not isinstance(enabled, bool):
        reader.problem(
            LAUNCHER_ENABLED_RULE,
            f"{path}.enabled",
            "The launcher does not say whether it is enabled; the SDK would treat it as disabled.",
            enabled,
            "true or false",
            f'set "enabled": true under {path}',
        )
        return None
    if not enabled:
        _disabled_options(reader, path, options, _LAUNCHER_KEYS, "launcher")
        return None
    return reader.build(
        path,
        LauncherConfig,
        kind=kind,
        processes_per_host=options.get("processes_per_host"),
        custom_mpi_options=options.get("custom_mpi_options"),
    )


def read_distribution(reader: Reader, value: Any, collective: Any) -> DistributedTraining | None:
    raw = reader.mapping("distribution", value, _DISTRIBUTION_KEYS)
    launchers: list[LauncherConfig] = []
    parameters: Mapping[str, Any] | None = None
    for key in (
        "torch_distributed",
        "pytorchddp",
        "mpi",
        "parameter_server",
        "multi_worker_mirrored_strategy",
        "pytorchxla",
    ):
        if key in raw:
            entry = _launcher(reader, f"distribution.{key}", Launcher(key), raw[key])
            if entry is not None:
                launchers.append(entry)
    if "smdistributed" in raw:
        smdistributed = reader.mapping(
            "distribution.smdistributed", raw["smdistributed"], _SMDISTRIBUTED_KEYS
        )
        if "dataparallel" in smdistributed:
            entry = _launcher(
                reader,
                "distribution.smdistributed.dataparallel",
                Launcher.SMDISTRIBUTED_DATA_PARALLEL,
                smdistributed["dataparallel"],
            )
            if entry is not None:
                launchers.append(entry)
        if "modelparallel" in smdistributed:
            parameters = _model_parallel(reader, smdistributed["modelparallel"])
    groups = reader.sequence("distribution.instance_groups", raw.get("instance_groups", []))
    collectives = _collectives(reader, collective)
    return reader.build(
        "distribution",
        DistributedTraining,
        launchers=tuple(launchers),
        instance_groups=tuple(groups),
        model_parallel_parameters=parameters,
        smddp_collectives=collectives,
    )


def _model_parallel(reader: Reader, value: Any) -> Mapping[str, Any] | None:
    path = "distribution.smdistributed.modelparallel"
    options = reader.mapping(path, value, _MODEL_PARALLEL_KEYS)
    if not isinstance(value, Mapping):
        return None
    enabled = options.get("enabled")
    if not isinstance(enabled, bool):
        reader.problem(
            LAUNCHER_ENABLED_RULE,
            f"{path}.enabled",
            "Model parallelism does not say whether it is enabled.",
            enabled,
            "true or false",
            f'set "enabled": true under {path}',
        )
        return None
    if not enabled:
        _disabled_options(reader, path, options, _MODEL_PARALLEL_KEYS, "model parallelism")
        return None
    return reader.mapping(f"{path}.parameters", options.get("parameters", {}), None)


def _disabled_options(
    reader: Reader, path: str, options: Mapping[str, Any], keys: frozenset[str], what: str
) -> None:
    """Options under ``enabled: false`` would be silently ignored: each is a violation."""
    for key in options:
        if key in keys - {"enabled"}:  # an unknown key is reported as one already
            reader.problem(
                LAUNCHER_ENABLED_RULE,
                f"{path}.{key}",
                f"The {what} is disabled (enabled: false), so this option would be ignored.",
                options[key],
                "options only under enabled: true",
                f'remove {key}, or set "enabled": true under {path}',
            )


def _collectives(reader: Reader, value: Any) -> tuple[SmddpCollective, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    names = [c.value for c in SmddpCollective]
    collectives = []
    for item in items:
        if isinstance(item, str) and item in names:
            collectives.append(SmddpCollective(item))
            continue
        meant = did_you_mean(item, names) if isinstance(item, str) else None
        reader.problem(
            TYPE_RULE,
            "smddp_collective",
            "Unknown SMDDP collective.",
            item,
            "AllReduce or AllGather (exactly as written)",
            f"did you mean '{meant}'?"
            if meant
            else 'set smddp_collective to "AllReduce" or "AllGather"',
        )
    return tuple(collectives)


def distribution_from_sdk_dict(
    distribution: Mapping[str, Any], *, smddp_collective: str | list[str] | None = None
) -> DistributedTraining:
    """The SDK's ``distribution`` dict as a ``DistributedTraining``; raises on problems."""
    reader = Reader()
    result = read_distribution(reader, distribution, smddp_collective)
    if result is None or reader.violations:
        raise SpecValidationError(reader.violations)
    return result


__all__ = [
    "distribution_from_sdk_dict",
    "read_distribution",
]
