"""What a training job's hosts log and what SageMaker makes of it, simulated for local runs.

A local job has no container, so this writes the lines its hosts would: each host's start line
(``MetricsReporter``), one interval line per host and minute with samples per second and, for
trainers, the data-wait fraction (for data hosts, the line ``serve`` writes of their workers'
time), and a line for each of the spec's own metric definitions
where one can be written from its regular expression. Then it does what SageMaker does with the
job's ``MetricDefinitions``: applies every regex to every line, publishes the captured values
to CloudWatch (namespace ``/aws/sagemaker/TrainingJobs``, dimension ``TrainingJobName``) and
keeps each metric's last value for ``FinalMetricDataList``. Logs go to
``/aws/sagemaker/TrainingJobs``, stream ``<job>/algo-<N>-<epoch>``, as SageMaker names them,
the hosts numbered as the rest of the simulation numbers them (``simulation.hosts``).

A local job lasts seconds: its hosts' lines are logged at its end (each host's start line
first), and their values go to CloudWatch on a timeline of at least ``MIN_SPAN`` up to it, so
that one-minute periods give each metric values over time. The numbers are made up but plausible
and the same for the same cluster: the trainers' data wait falls as the data hosts warm up,
and samples per second rise with it, as the data hosts' producers get busier.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hetero_constructs.local.simulation import LogWriter, hosts
from hetero_constructs.run.metrics import group_of_metric
from hetero_constructs.runtime.metrics import data_host_line, interval_line, start_line

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
HOMOGENEOUS = "homogeneousCluster"
NAMESPACE = "/aws/sagemaker/TrainingJobs"
INTERVAL = timedelta(minutes=1)
#: At most this many intervals per job (a long job's lines are spread over its time).
MAX_INTERVALS = 60
#: A local job takes seconds of wall-clock time: its metrics' timeline covers at least this much
#: time up to its end, so that they have values over time (CloudWatch's periods are minutes).
MIN_SPAN = timedelta(minutes=30)
_GROUP = re.compile(r"(?<!\\)\((?!\?)")
# What a line holds where a regex has one of these (before its escapes are undone).
_WRITTEN = ((r"\s+", " "), (r"\s*", " "), (r"\s", " "), (".*", " "), (".+", " "), (r"\d+", "1"))


@dataclass(frozen=True)
class _Host:
    name: str
    group: str
    instance_type: str
    trains: bool


def _hosts(request: Mapping[str, Any]) -> list[_Host]:
    """The job's hosts as the simulation numbers them (``simulation.hosts``), each with its
    group, instance type and whether it trains (a distribution group, or every group when the
    request names none)."""
    resources = request.get("ResourceConfig") or {}
    types = {
        str(g["InstanceGroupName"]): str(g["InstanceType"])
        for g in resources.get("InstanceGroups") or []
    }
    hyperparameters = request.get("HyperParameters") or {}
    trainers_text = str(hyperparameters.get("sagemaker_distribution_instance_groups", ""))
    placed = [(host, group or HOMOGENEOUS) for host, group in hosts(dict(request))]
    names = {group for _, group in placed}
    trainers = {name for name in names if f'"{name}"' in trainers_text} or names
    return [
        _Host(host, group, types.get(group, str(resources.get("InstanceType"))), group in trainers)
        for host, group in placed
    ]


def sample_line(regex: str, value: float) -> str | None:
    """A log line that ``regex`` matches with ``value`` as its first group, if one can be
    written by putting the value in place of the group and the regex's escapes back as the
    characters they stand for (``loss=([0-9.]+)`` gives ``loss=0.25``); else None."""
    match = _GROUP.search(regex)
    if match is None:
        return None
    depth, end = 0, None
    for index in range(match.start(), len(regex)):
        character = regex[index]
        if character == "\\":
            continue
        if character == "(" and (index == 0 or regex[index - 1] != "\\"):
            depth += 1
        elif character == ")" and regex[index - 1] != "\\":
            depth -= 1
            if depth == 0:
                end = index
                break
    if end is None:
        return None
    text = f"{value:.4f}"
    rest = regex[: match.start()].lstrip("^") + "\x00" + regex[end + 1 :].rstrip("$")
    for wildcard, written in _WRITTEN:
        rest = rest.replace(wildcard, written)
    candidate = re.sub(r"\\(.)", r"\1", rest).replace("\x00", text)
    try:
        found = re.search(regex, candidate)
    except re.error:
        return None
    if found is None or not found.groups() or found.group(1) != text:
        return None
    return candidate


def _value(rng: random.Random, progress: float, number: str, trains: bool) -> float:
    if number == "data_wait_fraction":
        return max(0.0, 0.6 * (1 - progress) ** 2 + rng.uniform(0, 0.03))
    base = 900.0 if trains else 1500.0
    return base * (0.5 + 0.5 * progress) + rng.uniform(-20, 20)


class JobTelemetry:
    """Writes a local job's lines and metrics through boto3 clients of the local cloud
    (``client``: a service name to a client, in the deployment's region as it is then)."""

    def __init__(self, client: Callable[[str], Any], logs: LogWriter) -> None:
        self._client = client
        # Lines go straight into moto's backend, as the simulation's own do: no client call a
        # fault or a recording harness would see.
        self._logs = logs

    @property
    def cloudwatch(self) -> Any:
        return self._client("cloudwatch")

    def started(self, job_name: str, request: Mapping[str, Any], at: datetime, epoch: int) -> None:
        """Each host's start line, naming its instance group (stream ``<job>/<host>-<epoch>``)."""
        for host in _hosts(request):
            role = "distributed" if host.trains else "data"
            self._put(
                job_name,
                host.name,
                epoch,
                [(at, start_line(host.name, host.group, role, host.instance_type))],
            )

    def _put(
        self, job_name: str, host: str, epoch: int, lines: Sequence[tuple[datetime, str]]
    ) -> None:
        for moment, message in lines:
            self._logs.write(f"{job_name}/{host}-{epoch}", moment, [message])

    def ended(
        self,
        job_name: str,
        request: Mapping[str, Any],
        start: datetime,
        end: datetime,
        epoch: int,
    ) -> list[dict[str, Any]]:
        """The lines of the job's time, its metrics in CloudWatch; its FinalMetricDataList."""
        definitions = list(
            (request.get("AlgorithmSpecification") or {}).get("MetricDefinitions") or []
        )
        every = _hosts(request)
        groups = {host.group for host in every}
        own = [d for d in definitions if group_of_metric(str(d.get("Name")), groups) is None]
        # Seeded by what the job runs on and each host's place in its group, not by the job's
        # name (it holds the run's start): the same job gives the same numbers
        # (docs/observability.md shows them).
        cluster = json.dumps(request.get("ResourceConfig"), sort_keys=True, default=str)
        rngs: dict[str, random.Random] = {}
        for host in sorted(every, key=lambda h: (h.group, int(h.name.rpartition("-")[2]))):
            place = sum(1 for other in rngs if other.startswith(f"{host.group}#"))
            rngs[f"{host.group}#{place}"] = rngs[host.name] = random.Random(
                f"{cluster}#{host.group}#{place}"
            )
        # The lines are logged at the job's end (a follow display shows them in time order);
        # their values are stamped on a timeline of at least MIN_SPAN up to it.
        timeline = max(end - start, MIN_SPAN)
        count = max(1, min(MAX_INTERVALS, int(timeline / INTERVAL)))
        step = timeline / count
        start = end - timeline
        for host in every:  # the start line first, then the intervals
            role = "distributed" if host.trains else "data"
            line = start_line(host.name, host.group, role, host.instance_type)
            self._put(job_name, host.name, epoch, [(end, line)])
        by_host: dict[str, list[tuple[datetime, str]]] = {host.name: [] for host in every}
        for index in range(1, count + 1):
            moment, progress = start + step * index, index / count
            for host in every:
                rng = rngs[host.name]
                speed = _value(rng, progress, "samples_per_second", host.trains)
                wait = _value(rng, progress, "data_wait_fraction", True) if host.trains else None
                by_host[host.name].append((moment, interval_line(host.group, speed, wait)))
                if not host.trains:  # no random draw: the other numbers stay as they were
                    load = (0.55 + 0.4 * progress, 0.4 * (1 - progress), 0.02)
                    line = data_host_line(host.group, host.name, load, speed / 32, speed * 12288)
                    by_host[host.name].append((moment, line))
            # The spec's own metrics: a line on the first host, where one can be written.
            for definition in own:
                value = round(2.0 * (1 - progress) + 0.1, 4)
                written = sample_line(str(definition["Regex"]), value)
                if written is not None and every:
                    by_host[every[0].name].append((moment, written))
        for host in every:
            self._put(job_name, host.name, epoch, [(end, text) for _, text in by_host[host.name]])
        return self._extract(job_name, definitions, by_host)

    def _extract(
        self,
        job_name: str,
        definitions: Sequence[Mapping[str, Any]],
        by_host: Mapping[str, Sequence[tuple[datetime, str]]],
    ) -> list[dict[str, Any]]:
        """What SageMaker does with the definitions: every regex over every line."""
        final: dict[str, tuple[datetime, float]] = {}
        data: list[dict[str, Any]] = []
        lines = sorted((moment, text) for entries in by_host.values() for moment, text in entries)
        for definition in definitions:
            name, regex = str(definition["Name"]), str(definition["Regex"])
            try:
                pattern = re.compile(regex)
            except re.error:
                continue
            for moment, text in lines:
                found = pattern.search(text)
                if found is None or not found.groups():
                    continue
                try:
                    value = float(found.group(1))
                except (TypeError, ValueError):
                    continue
                final[name] = (moment, value)
                data.append(
                    {
                        "MetricName": name,
                        "Dimensions": [{"Name": "TrainingJobName", "Value": job_name}],
                        "Timestamp": moment.astimezone(UTC).replace(tzinfo=None),
                        "Value": value,
                    }
                )
        if data:
            # Straight into moto's backend, as the lines: no client call a fault would see.
            from moto.cloudwatch.models import cloudwatch_backends

            backend = cloudwatch_backends[self._logs.account][self._logs.region]
            backend.put_metric_data(NAMESPACE, data)
        return [
            {"MetricName": name, "Value": value, "Timestamp": moment}
            for name, (moment, value) in final.items()
        ]


__all__ = ["INTERVAL", "LOG_GROUP", "NAMESPACE", "JobTelemetry", "sample_line"]
