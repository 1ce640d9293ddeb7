"""A training job's CloudWatch log lines from every host, labelled with host and instance group.

SageMaker writes each host's output to ``/aws/sagemaker/TrainingJobs``, stream
``{job name}/algo-{N}-{epoch}``. The streams are not grouped by instance group, and host numbers
do not follow the groups' order (a job with groups ``[data x1, gpu x2]`` may put ``algo-2`` in
``data`` and ``algo-1``, ``algo-3`` in ``gpu``): no API says which host is in which group. So a
host's group is known only

- when the job has a single instance group (every host is in it);
- from the host's start line, which ``hetero_runtime``'s ``MetricsReporter`` writes first
  (``[hetero-train] host=algo-2 instance_group=data ...``): from the host's first line on;
- from the host's own log: the training toolkit prints its environment before the script runs
  (``SM_CURRENT_INSTANCE_GROUP=gpu``, ``SM_INSTANCE_GROUPS_DICT={...}``, and the "Training Env"
  JSON with ``"current_instance_group": "gpu"``), as does ``hetero_runtime``'s
  ``TrainingEnvironment.to_dict()`` when a script logs it;
- by elimination: when all but one group's hosts are known, the rest are in that group.

Until then a line is labelled with its host only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from hetero_constructs.runs.clients import error_code
from hetero_constructs.runtime.metrics import START_LINE, line_word

TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"
# Empty pages read on per stream and poll before the rest waits for the next poll.
_EMPTY_PAGES_PER_POLL = 10
_STREAM = re.compile(r"^(?P<job>.+)/(?P<host>algo-(?P<number>\d+))-(?P<epoch>\d+)$")
_CURRENT_GROUP = re.compile(
    r"""(?:SM_CURRENT_INSTANCE_GROUP=|"current_instance_group":\s*")(?P<group>[^"\s]+)"""
)
_GROUPS_DICT = re.compile(r'(?:SM_INSTANCE_GROUPS_DICT=|"instance_groups_dict":\s*)(?=\{)')


@dataclass(frozen=True)
class LogLine:
    """One log event of one host."""

    timestamp: datetime
    job: str
    host: str
    group: str | None
    message: str
    attempt: str | None = None

    def label(self, *, with_job: str | None = None) -> str:
        """``algo-1 gpu``; with ``with_job``, that job marker first."""
        parts = [with_job] if with_job else []
        parts.append(self.host)
        if self.group:
            parts.append(self.group)
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The line as JSON values (the timestamp in ISO 8601)."""
        return {
            "timestamp": self.timestamp.isoformat(),
            "job": self.job,
            "attempt": self.attempt,
            "host": self.host,
            "group": self.group,
            "message": self.message,
        }


def host_number(host: str) -> int:
    match = re.fullmatch(r"algo-(\d+)", host)
    return int(match.group(1)) if match else 1 << 30


class HostGroups:
    """Which host is in which instance group, learnt from what the job's hosts log."""

    def __init__(self, groups: Mapping[str, int]) -> None:
        # Group name -> instance count (from DescribeTrainingJob); empty for a homogeneous job.
        self.counts = dict(groups)
        self.known: dict[str, str] = {}
        self.hosts: set[str] = set()

    def update_counts(self, groups: Mapping[str, int]) -> None:
        if groups and not self.counts:
            self.counts = dict(groups)

    def group_of(self, host: str) -> str | None:
        self.hosts.add(host)
        if host in self.known:
            return self.known[host]
        if len(self.counts) == 1:
            return next(iter(self.counts))
        return self._by_elimination(host)

    def _by_elimination(self, host: str) -> str | None:
        if not self.counts:
            return None
        placed: dict[str, int] = {}
        for group in self.known.values():
            placed[group] = placed.get(group, 0) + 1
        open_groups = [g for g, count in self.counts.items() if placed.get(g, 0) < count]
        return open_groups[0] if len(open_groups) == 1 else None

    def learn(self, host: str, message: str) -> None:
        """Take what this host's log line says about groups, if anything."""
        if "instance_group" not in message.lower():
            return
        start = START_LINE.search(message)
        if start is not None:
            group = self._group_named(start.group("group"))
            if group is not None:
                self.known[host] = group
                return
        for match in _GROUPS_DICT.finditer(message):
            self._learn_dict(message, match.end())
        current = _CURRENT_GROUP.search(message)
        if current and self._is_group(current.group("group")):
            self.known[host] = current.group("group")

    def _group_named(self, word: str) -> str | None:
        """The group a start line names (it writes white space in a name as ``_``)."""
        if not self.counts:
            return word if word != "homogeneousCluster" else None
        return next((g for g in self.counts if line_word(g) == word), None)

    def _is_group(self, name: str) -> bool:
        return name in self.counts if self.counts else name != "homogeneousCluster"

    def _learn_dict(self, message: str, start: int) -> None:
        try:
            value, _ = json.JSONDecoder().raw_decode(message, start)
        except (ValueError, RecursionError):  # a line is any text: not JSON, or nested too deep
            return
        if not isinstance(value, Mapping):
            return
        for name, group in value.items():
            hosts = group.get("hosts") if isinstance(group, Mapping) else None
            if isinstance(hosts, list) and self._is_group(str(name)):
                for member in hosts:
                    self.known[str(member)] = str(name)

    @property
    def unknown_hosts(self) -> list[str]:
        return sorted((h for h in self.hosts if self.group_of(h) is None), key=host_number)


def _stream_host(stream_name: str) -> str:
    match = _STREAM.match(stream_name)
    return match.group("host") if match else stream_name.rsplit("/", 1)[-1]


class JobLogs:
    """Reads one job's log streams, each from where the last read stopped."""

    def __init__(
        self,
        logs: Any,
        job_name: str,
        groups: HostGroups | None = None,
        *,
        attempt: str | None = None,
        log_group: str = TRAINING_LOG_GROUP,
    ) -> None:
        self.logs = logs
        self.job_name = job_name
        self.attempt = attempt
        self.groups = groups or HostGroups({})
        self.log_group = log_group
        self._tokens: dict[str, str | None] = {}

    def _streams(self) -> list[str]:
        names: list[str] = []
        paginator = self.logs.get_paginator("describe_log_streams")
        try:
            for page in paginator.paginate(
                logGroupName=self.log_group, logStreamNamePrefix=f"{self.job_name}/"
            ):
                names.extend(s["logStreamName"] for s in page.get("logStreams", []))
        except ClientError as error:
            if error_code(error) == "ResourceNotFoundException":
                return []  # no job has logged in this account and region yet
            raise
        return names

    def _new_events(self, stream: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        token = self._tokens.get(stream)
        empty_pages = 0
        while True:
            kwargs: dict[str, Any] = {
                "logGroupName": self.log_group,
                "logStreamName": stream,
                "startFromHead": True,
            }
            if token:
                kwargs["nextToken"] = token
            try:
                page = self.logs.get_log_events(**kwargs)
            except ClientError as error:
                # Deleted since it was listed (retention, a cleanup): nothing more to read.
                if error_code(error) != "ResourceNotFoundException":
                    raise
                break
            page_events = page.get("events", [])
            events.extend(page_events)
            following = page.get("nextForwardToken")
            # The end of a stream is the token it was given coming back. A page can be empty
            # while more events follow its token: read on, a bounded number of empty pages per
            # poll (the token is kept, so the next poll goes on from there).
            empty_pages = 0 if page_events else empty_pages + 1
            if following == token or following is None or empty_pages > _EMPTY_PAGES_PER_POLL:
                token = following or token
                break
            token = following
        self._tokens[stream] = token
        return events

    def poll(self) -> list[LogLine]:
        """New lines of every host, in time order (hosts in number order at equal times)."""
        raw: list[tuple[str, dict[str, Any]]] = []
        for stream in self._streams():
            host = _stream_host(stream)
            for event in self._new_events(stream):
                raw.append((host, event))
        for host, event in raw:
            self.groups.learn(host, str(event.get("message", "")))
        lines = [
            LogLine(
                datetime.fromtimestamp(int(event["timestamp"]) / 1000, UTC),
                self.job_name,
                host,
                self.groups.group_of(host),
                str(event.get("message", "")).rstrip("\n"),
                self.attempt,
            )
            for host, event in raw
        ]
        return sort_lines(lines)


def sort_lines(lines: Iterable[LogLine]) -> list[LogLine]:
    """Interleave lines of all hosts (and jobs) in time order; the sort is stable, so each
    stream keeps its own order at equal timestamps."""
    return sorted(lines, key=lambda line: (line.timestamp, host_number(line.host)))


__all__ = [
    "TRAINING_LOG_GROUP",
    "HostGroups",
    "JobLogs",
    "LogLine",
    "host_number",
    "sort_lines",
]
