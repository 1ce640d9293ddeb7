"""Heterogeneous-cluster rules (seed 002): groups, the distribution group, channel scoping."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.checks.helpers import channel_path, count_finding, group_path, misfits_count
from hetero_constructs.request.context import RuleContext
from hetero_constructs.service import catalog
from hetero_constructs.spec.distribution import Launcher
from hetero_constructs.spec.fields import is_integer

_SEED = "Seed 002 (train with a heterogeneous cluster)"
_GROUPS_PATH = "ResourceConfig.InstanceGroups"
_CHANNEL_GROUPS_PATH = "InputDataConfig[].DataSource.S3DataSource.InstanceGroupNames"
_HOMOGENEOUS_ONLY = {
    Launcher.PARAMETER_SERVER: "the TensorFlow toolkit builds TF_CONFIG only for the "
    "distribution group and fails on the others",
    Launcher.MULTI_WORKER_MIRRORED: "the SDK and toolkit support it only on homogeneous clusters",
}


@rule(
    "HC-GROUPS-OR-TYPE",
    source="SDK v2 job.py _prepare_resource_config; service: 'InstanceType or InstanceCount "
    "cannot be specified with InstanceGroups'",
    example="instance_groups: [...]  (or instance_type + instance_count, never both)",
)
def groups_or_type(context: RuleContext) -> Iterator[Finding]:
    """A job declares either ``instance_groups`` or ``instance_type`` and ``instance_count``."""
    spec = context.spec
    homogeneous = [
        name for name in ("instance_type", "instance_count") if getattr(spec, name) is not None
    ]
    if spec.instance_groups and homogeneous:
        yield Finding(
            homogeneous[0],
            "instance_type/instance_count cannot be set together with instance_groups.",
            {name: getattr(spec, name) for name in homogeneous},
            "instance_groups alone (heterogeneous) or instance_type + instance_count (homogeneous)",
            "move the instances into an instance group and drop instance_type/instance_count",
        )
    elif not spec.instance_groups and len(homogeneous) < 2:
        missing = [n for n in ("instance_type", "instance_count") if n not in homogeneous]
        yield Finding(
            missing[0],
            "The job declares no instances.",
            None,
            "instance_groups, or both instance_type and instance_count",
            f"set {' and '.join(missing)}, or declare instance_groups",
        )


@rule(
    "HC-GROUP-COUNT",
    source=f"API model {_GROUPS_PATH} (list bounds); {_SEED}",
    example='instance_groups: [{"name": "cpu", ...}, {"name": "gpu", ...}]',
)
def group_count(context: RuleContext) -> Iterator[Finding]:
    """A heterogeneous cluster has at most as many instance groups as the API takes (5)."""
    groups = context.spec.instance_groups
    if groups and misfits_count(groups, _GROUPS_PATH):
        yield count_finding("instance_groups", groups, _GROUPS_PATH, "instance groups")


@rule(
    "HC-GROUP-NAMES-UNIQUE",
    source="Service: group names identify groups in channels and the distribution",
    example='instance_groups: [{"name": "cpu", ...}, {"name": "gpu", ...}]',
)
def group_names_unique(context: RuleContext) -> Iterator[Finding]:
    """Instance group names are unique within a job."""
    names = [g.name for g in context.spec.instance_groups]
    if len(set(names)) == len(names):  # the usual case, decided without counting
        return
    counts = Counter(names)
    for name, count in counts.items():
        if count > 1 and context.known(name):
            yield Finding(
                group_path(context, name) + ".name",
                f"{count} instance groups share one name; channels and the distribution could "
                "not tell them apart.",
                name,
                "a distinct name per group",
                "rename the duplicates",
            )


@rule(
    "HC-INSTANCE-COUNT",
    source="Service behaviour; the API model's minimum (0) would start a group with no instance",
    example='{"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2}',
)
def instance_count(context: RuleContext) -> Iterator[Finding]:
    """Every group, and a homogeneous cluster, has at least one instance."""
    spec = context.spec
    # (group index, or None for the homogeneous count; the count)
    counted: list[tuple[int | None, Any]] = list(
        enumerate(g.instance_count for g in spec.instance_groups)
    )
    if spec.instance_count is not None:
        counted.append((None, spec.instance_count))
    for index, count in counted:
        if context.known(count) and is_integer(count) and count < 1:
            yield Finding(
                "instance_count" if index is None else f"instance_groups[{index}].instance_count",
                "An instance count below 1 starts no instance.",
                count,
                "an integer >= 1",
                "set the count to 1 or more, or remove the group",
            )


@rule(
    "HC-DISTRIBUTION-GROUP-COUNT",
    source=f"{_SEED}: 'only one instance group of a heterogeneous cluster can be specified to "
    "the distribution configuration'; SDK v2 fw_utils.validate_distribution",
    example='distribution: {"torch_distributed": {"enabled": true}, "instance_groups": ["gpu"]}',
)
def distribution_group_count(context: RuleContext) -> Iterator[Finding]:
    """With a launcher on a multi-group cluster, exactly one distribution group is named.

    With a single group it is chosen automatically.
    """
    groups = context.spec.instance_groups
    requested = context.requested_distribution_groups
    if not context.launchers or len(groups) < 2 or len(requested) == 1:
        return
    names = [g.name for g in groups]
    accelerated = [
        g.name
        for g in groups
        if context.known(g.instance_type) and catalog.is_accelerated(g.instance_type)
    ]
    suggestion = accelerated[0] if accelerated else names[0]
    yield Finding(
        "distribution.instance_groups",
        "A launcher on a heterogeneous cluster runs on exactly one instance group"
        + (", and none is named." if not requested else f", but {len(requested)} are named."),
        list(requested),
        f"exactly one of {names}",
        f'set distribution.instance_groups to ["{suggestion}"]',
    )


@rule(
    "HC-DISTRIBUTION-GROUP-EXISTS",
    source="SDK v2 fw_utils.validate_distribution ('Invalid training instance group')",
    example='distribution: {"mpi": {"enabled": true}, "instance_groups": ["gpu"]}',
)
def distribution_group_exists(context: RuleContext) -> Iterator[Finding]:
    """Every group named in ``distribution.instance_groups`` is one of the job's groups."""
    if not context.spec.instance_groups:
        return
    names = [g.name for g in context.spec.instance_groups]
    for index, name in enumerate(context.requested_distribution_groups):
        if context.known(name) and name not in names:
            yield Finding(
                f"distribution.instance_groups[{index}]",
                "The distribution names an instance group the job does not declare.",
                name,
                f"one of {names}",
                "use the name of a declared group",
            )


@rule(
    "HC-DISTRIBUTION-GROUPS-NEED-CLUSTER",
    source="SDK v2 fw_utils.validate_distribution ('Instance groups not specified in the "
    "estimator'); estimator.py ('Don't set training instance groups while no distribution "
    "strategies enabled')",
    example='distribution: {"mpi": {"enabled": true}, "instance_groups": ["gpu"]}',
)
def distribution_groups_need_cluster(context: RuleContext) -> Iterator[Finding]:
    """``distribution.instance_groups`` needs a heterogeneous cluster and a launcher."""
    requested = context.requested_distribution_groups
    if not requested:
        return
    if not context.spec.instance_groups:
        yield Finding(
            "distribution.instance_groups",
            "The distribution names instance groups, but the job has no instance groups.",
            list(requested),
            "distribution.instance_groups only with instance_groups",
            "declare instance_groups, or remove distribution.instance_groups",
        )
    elif not context.launchers:
        yield Finding(
            "distribution.instance_groups",
            "The distribution names an instance group but enables no launcher to run on it.",
            list(requested),
            "a launcher (torch_distributed, pytorchddp, smdistributed, mpi) with the group",
            "enable a launcher, or remove distribution.instance_groups",
        )


@rule(
    "HC-LAUNCHER-SUPPORTED",
    source=f"{_SEED}; SDK v2 estimator.py; TensorFlow toolkit training.py",
    example='distribution: {"mpi": {"enabled": true}, "instance_groups": ["gpu"]}',
)
def launcher_supported_on_groups(context: RuleContext) -> Iterator[Finding]:
    """Parameter server, MultiWorkerMirroredStrategy and model parallel v2 need one group.

    They cannot be scoped to one group of a multi-group cluster.
    """
    if len(context.spec.instance_groups) < 2:
        return
    for entry in context.launchers:
        reason = _HOMOGENEOUS_ONLY.get(entry.kind)
        if reason:
            yield Finding(
                f"distribution.{entry.kind.value}",
                f"{entry.kind.value} does not run on a heterogeneous cluster: {reason}.",
                [g.name for g in context.spec.instance_groups],
                "mpi, torch_distributed, pytorchddp or smdistributed.dataparallel on one group",
                "use mpi or torch_distributed on the distribution group, or a homogeneous cluster",
            )
    if context.model_parallel and context.launcher_kind is Launcher.TORCH_DISTRIBUTED:
        yield Finding(
            "distribution.smdistributed.modelparallel",
            "Model parallel v2 cannot be scoped to one group of a heterogeneous cluster.",
            [g.name for g in context.spec.instance_groups],
            "model parallel v2 on a homogeneous cluster",
            "use a homogeneous cluster, or model parallel v1 under mpi",
        )


@rule(
    "HC-FRAMEWORK-VERSION",
    source=f"{_SEED}: 'supported frameworks are PyTorch v1.10 or later and TensorFlow v2.6 "
    "or later'",
    example='framework_version: "2.3.0"',
    severity="warning",
)
def heterogeneous_framework_version(context: RuleContext) -> Iterator[Finding]:
    """Instance groups need PyTorch 1.10 or later, or TensorFlow 2.6 or later."""
    version = context.version
    if not context.spec.instance_groups or version is None:
        return
    minimum = catalog.HETEROGENEOUS_MIN_VERSION[context.spec.framework]
    if version < minimum:
        needed = ".".join(map(str, minimum))
        yield Finding(
            "framework_version",
            "Heterogeneous clusters need a newer framework version.",
            context.spec.framework_version,
            f"{context.spec.framework.value} {needed} or later",
            f"set framework_version to {needed} or later",
        )


@rule(
    "HC-CHANNEL-GROUPS-EXIST",
    source="Service (the SDK never checks channel group names)",
    example='channels: {"train": {"s3_uri": "s3://bucket/train", "instance_groups": ["cpu"]}}',
)
def channel_groups_exist(context: RuleContext) -> Iterator[Finding]:
    """Every group a channel names is one of the job's groups (and the job has groups)."""
    names = [g.name for g in context.spec.instance_groups]
    for channel in context.spec.channels:
        for index, name in enumerate(channel.group_names):
            if context.known(name) and name not in names:
                yield Finding(
                    channel_path(channel.name, f"instance_groups[{index}]"),
                    "The channel is sent to an instance group the job does not declare.",
                    name,
                    f"one of {names}" if names else "no group names on a homogeneous job",
                    "use a declared group name"
                    if names
                    else "remove the channel's instance_groups",
                )


@rule(
    "HC-CHANNEL-GROUPS-ALL-OR-NOTHING",
    source="Service ValidationException 'Some channels have assigned instance groups ... while "
    "others not' (aws/sagemaker-python-sdk#5225, #6116)",
    example='channels: {"train": {..., "instance_groups": ["cpu"]}, '
    '"eval": {..., "instance_groups": ["gpu"]}}',
)
def channel_groups_all_or_nothing(context: RuleContext) -> Iterator[Finding]:
    """If one channel is scoped to instance groups, every channel is."""
    channels = context.spec.channels
    scoped = [c.name for c in channels if c.instance_groups]
    if not scoped or len(scoped) == len(channels):
        return
    all_groups = [g.name for g in context.spec.instance_groups]
    for channel in channels:
        if not channel.instance_groups:
            yield Finding(
                channel_path(channel.name, "instance_groups"),
                f"Channels {scoped} are scoped to instance groups but this one is not; the "
                "service rejects the mix.",
                [],
                "instance_groups on every channel, or on none",
                f"set instance_groups on this channel too, e.g. {all_groups} to send it to all",
            )


@rule(
    "HC-CHANNEL-GROUP-LIMIT",
    source=f"API model {_CHANNEL_GROUPS_PATH} (list bounds)",
    example='"instance_groups": ["cpu", "gpu"]',
)
def channel_group_limit(context: RuleContext) -> Iterator[Finding]:
    """A channel names at most as many instance groups as the API takes (5), each once."""
    for channel in context.spec.channels:
        if not channel.instance_groups:
            continue
        names = channel.group_names
        if misfits_count(names, _CHANNEL_GROUPS_PATH):
            path = channel_path(channel.name, "instance_groups")
            yield count_finding(path, names, _CHANNEL_GROUPS_PATH, "group names")
        if len(set(names)) == len(names):
            continue
        repeated = sorted(n for n, c in Counter(names).items() if c > 1)
        if repeated:
            yield Finding(
                channel_path(channel.name, "instance_groups"),
                "The channel names an instance group more than once.",
                repeated,
                "each group name once",
                "remove the repeated names",
            )


_WARM_POOLS = (
    "SageMaker developer guide, train-warm-pools (Considerations): warm pools 'cannot be used "
    "with heterogeneous cluster training', 'cannot be used with spot instances', and are "
    "'limited to a KeepAlivePeriodInSeconds value of 3600 seconds' (the API model allows 21600); "
    "Terraform's aws_sagemaker_training_job documents the same conflict"
)
MAX_KEEP_ALIVE_SECONDS = 3600


@rule(
    "HC-WARM-POOL",
    source=_WARM_POOLS,
    example="instance_type: ml.g5.2xlarge, instance_count: 1, keep_alive_period_in_seconds: 1800",
    needs=("keep_alive_period_in_seconds",),
)
def warm_pool(context: RuleContext) -> Iterator[Finding]:
    """A warm pool (keep_alive_period_in_seconds) is for homogeneous on-demand jobs, at most 1 h."""
    spec = context.spec
    keep_alive = spec.keep_alive_period_in_seconds
    if keep_alive is None or not context.known(keep_alive):
        return
    path = "keep_alive_period_in_seconds"
    if spec.instance_groups:
        yield Finding(
            path,
            "Warm pools cannot be used with heterogeneous clusters (instance_groups).",
            keep_alive,
            "no keep_alive_period_in_seconds with instance_groups",
            "remove keep_alive_period_in_seconds, or train on one instance type",
        )
    if spec.use_spot_instances:
        yield Finding(
            path,
            "Warm pools cannot be used with spot instances.",
            keep_alive,
            "no keep_alive_period_in_seconds with use_spot_instances",
            "remove keep_alive_period_in_seconds, or train on demand",
        )
    if is_integer(keep_alive) and not 0 <= keep_alive <= MAX_KEEP_ALIVE_SECONDS:
        yield Finding(
            path,
            "A warm pool is kept at most one hour.",
            keep_alive,
            f"0 to {MAX_KEEP_ALIVE_SECONDS} seconds",
            f"use at most {MAX_KEEP_ALIVE_SECONDS}",
        )


__all__ = [
    "MAX_KEEP_ALIVE_SECONDS",
    "channel_group_limit",
    "channel_groups_all_or_nothing",
    "channel_groups_exist",
    "distribution_group_count",
    "distribution_group_exists",
    "distribution_groups_need_cluster",
    "group_count",
    "group_names_unique",
    "groups_or_type",
    "heterogeneous_framework_version",
    "instance_count",
    "launcher_supported_on_groups",
    "warm_pool",
]
