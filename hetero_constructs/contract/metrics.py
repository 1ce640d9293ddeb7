"""The metrics of a run: the built-in definitions, their names per instance group, and
``FinalMetricDataList`` as the task's output and the command line read it.

The training script's ``MetricsReporter`` (``hetero_constructs.runtime.metrics``) writes one
start line per host and interval lines per group; SageMaker turns the interval lines into the
job's metrics through the definitions made here, two per instance group that trains and four per
group that only serves data. Their names are ``<group>:samples_per_second`` and
``<group>:data_wait_fraction`` for the trainers, and for the data hosts (the lines
``runtime.data.serve`` writes) ``<group>:producing_fraction``, ``<group>:credit_wait_fraction``
and ``<group>:send_blocked_fraction``: the dashboard, local runs and the command line use these
functions, never the names spelled out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hetero_constructs.runtime.config import HOMOGENEOUS_GROUP
from hetero_constructs.runtime.metrics import (
    DATA_HOST_NUMBERS,
    DATA_WAIT_FRACTION,
    SAMPLES_PER_SECOND,
    metric_regex,
)
from hetero_constructs.spec.training import TrainingMetric, TrainingSpec

#: The built-in numbers of a training group, in the order the definitions list them.
TRAINER_NUMBERS = (SAMPLES_PER_SECOND, DATA_WAIT_FRACTION)
#: The built-in numbers of a data group: its samples per second and its hosts' own load.
DATA_GROUP_NUMBERS = (SAMPLES_PER_SECOND, *DATA_HOST_NUMBERS)
#: Every built-in number.
BUILTIN_NUMBERS = (*TRAINER_NUMBERS, *DATA_HOST_NUMBERS)


@dataclass(frozen=True)
class GroupMetrics:
    """One instance group of a job as the metrics see it."""

    name: str
    instance_type: str
    instance_count: int | str
    trains: bool  # runs the training (waits for data), or only serves it

    @property
    def numbers(self) -> tuple[str, ...]:
        return TRAINER_NUMBERS if self.trains else DATA_GROUP_NUMBERS


def metric_name(group: str, number: str) -> str:
    """The metric name of one of a group's built-in numbers, e.g. ``gpu:samples_per_second``."""
    return f"{group}:{number}"


def groups_of(spec: TrainingSpec) -> list[GroupMetrics]:
    """The job's instance groups, each with whether it trains.

    A heterogeneous job's trainers are the distribution's groups (every group when the
    distribution names none); a homogeneous job is one group, ``homogeneousCluster``, as
    SageMaker names it in the container.
    """
    if not spec.instance_groups:
        return [
            GroupMetrics(
                HOMOGENEOUS_GROUP,
                str(spec.instance_type),
                spec.instance_count if spec.instance_count is not None else 1,
                True,
            )
        ]
    named = set(spec.distribution.group_names) if spec.distribution is not None else set()
    return [
        GroupMetrics(
            group.name,
            str(group.instance_type),
            group.instance_count,
            not named or group.name in named,
        )
        for group in spec.instance_groups
    ]


def builtin_metric_definitions(spec: TrainingSpec) -> list[TrainingMetric]:
    """The definitions that turn the reporter's interval lines into the job's metrics."""
    return [
        TrainingMetric(metric_name(group.name, number), metric_regex(group.name, number))
        for group in groups_of(spec)
        for number in group.numbers
    ]


def metric_definitions(spec: TrainingSpec, *, builtin: bool = True) -> list[TrainingMetric]:
    """Every definition of the job: the spec's, then the built-in ones not named alike."""
    own = list(spec.metric_definitions)
    if not builtin:
        return own
    taken = {metric.name for metric in own}
    return own + [m for m in builtin_metric_definitions(spec) if m.name not in taken]


@dataclass(frozen=True)
class MetricValue:
    """One value of one metric (an entry of ``FinalMetricDataList``, or a point over time)."""

    name: str
    value: float
    timestamp: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "MetricName": self.name,
            "Value": self.value,
            "Timestamp": self.timestamp.isoformat() if self.timestamp else None,
        }


def final_metrics(job: Mapping[str, Any]) -> list[MetricValue]:
    """``FinalMetricDataList`` of a described job (or the task's output), in its order; entries
    without a name or a number are skipped."""
    values: list[MetricValue] = []
    for entry in job.get("FinalMetricDataList") or []:
        if not isinstance(entry, Mapping):
            continue
        name, value = entry.get("MetricName"), entry.get("Value")
        if not isinstance(name, str) or not isinstance(value, int | float | str):
            continue
        if isinstance(value, bool):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        stamp = entry.get("Timestamp")
        values.append(MetricValue(name, number, stamp if isinstance(stamp, datetime) else None))
    return values


def group_of_metric(name: str, groups: Iterable[str]) -> str | None:
    """The instance group a built-in metric's name belongs to, if it is one."""
    for group in groups:
        if any(name == metric_name(group, number) for number in BUILTIN_NUMBERS):
            return group
    return None


def select_group(names: Sequence[str], group: str | None, groups: Iterable[str]) -> list[str]:
    """The metric names ``--group`` keeps: that group's built-in ones and every metric of the
    spec (a user's metric is the job's, not a group's)."""
    if group is None:
        return list(names)
    known = list(groups)
    return [n for n in names if group_of_metric(n, known) in (None, group)]


#: How a drill's status messages start (a local job scripted with ``--outcome`` or
#: ``--simulate``: no code ran): the local account writes it, and displays read a job as
#: simulated from it, whichever client asks.
SIMULATED_STATUS_PREFIX = "simulated: "


def is_simulated(transitions: list[dict[str, Any]]) -> bool:
    """Whether a job's ``SecondaryStatusTransitions`` are a drill's."""
    return any(
        str(item.get("StatusMessage") or "").startswith(SIMULATED_STATUS_PREFIX)
        for item in transitions
    )


__all__ = [
    "BUILTIN_NUMBERS",
    "DATA_GROUP_NUMBERS",
    "SIMULATED_STATUS_PREFIX",
    "TRAINER_NUMBERS",
    "GroupMetrics",
    "MetricValue",
    "builtin_metric_definitions",
    "final_metrics",
    "group_of_metric",
    "groups_of",
    "metric_definitions",
    "metric_name",
    "select_group",
]
