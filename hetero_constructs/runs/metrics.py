"""A run's metrics: each over time from CloudWatch, and the final values.

SageMaker publishes each metric definition's values in the namespace ``/aws/sagemaker/
TrainingJobs`` with the dimension ``TrainingJobName``, as the SDK's ``TrainingJobAnalytics``
reads them; the final values are DescribeTrainingJob's ``FinalMetricDataList``. ``run_metrics``
reads every job of a run; the command line draws them (``hetero-train metrics``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hetero_constructs.contract.metrics import (
    MetricValue,
    final_metrics,
    group_of_metric,
    select_group,
)
from hetero_constructs.runs.execution import TrainingJob, read_run, utc_now
from hetero_constructs.runtime.config import HOMOGENEOUS_GROUP

NAMESPACE = "/aws/sagemaker/TrainingJobs"
DEFAULT_PERIOD_SECONDS = 60
# GetMetricData takes at most 500 queries per call; a job has at most 40 definitions.
_QUERIES_PER_CALL = 500


@dataclass
class MetricSeries:
    """One metric of one job: its values over time and its final value."""

    name: str
    group: str | None
    points: list[MetricValue] = field(default_factory=list)
    final: float | None = None

    @property
    def latest(self) -> float | None:
        return (
            self.final
            if self.final is not None
            else (self.points[-1].value if self.points else None)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "group": self.group,
            "final": self.final,
            "latest": self.latest,
            "points": [
                {"timestamp": p.timestamp.isoformat() if p.timestamp else None, "value": p.value}
                for p in self.points
            ],
        }


def job_groups(job: TrainingJob) -> list[str]:
    return list(job.instance_groups) or [HOMOGENEOUS_GROUP]


def metric_names(job: TrainingJob) -> list[str]:
    """The job's metric definitions' names, as DescribeTrainingJob gives them."""
    algorithm = job.description.get("AlgorithmSpecification") or {}
    return [
        str(d["Name"])
        for d in algorithm.get("MetricDefinitions") or []
        if isinstance(d, Mapping) and d.get("Name")
    ]


def _window(job: TrainingJob, period: int) -> tuple[datetime, datetime]:
    description = job.description
    start = description.get("TrainingStartTime") or description.get("CreationTime")
    end = description.get("TrainingEndTime") if job.ended else None
    now = utc_now()
    begin = start if isinstance(start, datetime) else now - timedelta(hours=3)
    finish = end if isinstance(end, datetime) else max(now, begin)
    # The dimension is the job's own name: a wider window finds nothing of other jobs, and
    # takes in lines a job's hosts stamped before SageMaker's start time (clock skew; the local
    # simulation spreads a seconds-long job's lines over the half hour before its end).
    return begin - timedelta(hours=1), finish + timedelta(seconds=period)


def read_series(
    cloudwatch: Any,
    job: TrainingJob,
    *,
    group: str | None = None,
    period: int = DEFAULT_PERIOD_SECONDS,
) -> list[MetricSeries]:
    """Every metric of ``job`` (``group``: that group's built-in ones and the spec's), each
    with its values over the job's time and its final value."""
    groups = job_groups(job)
    names = select_group(metric_names(job), group, groups)
    finals = {value.name: value.value for value in final_metrics(job.description)}
    series = {name: MetricSeries(name, group_of_metric(name, groups)) for name in names}
    for name in finals.keys() - series.keys():  # a final value with no definition (SageMaker's)
        if group is None or group_of_metric(name, groups) in (None, group):
            series[name] = MetricSeries(name, group_of_metric(name, groups))
    for name, item in series.items():
        item.final = finals.get(name)
    if cloudwatch is not None and series:
        _fill(cloudwatch, job.name, list(series.values()), *_window(job, period), period)
    return list(series.values())


def _fill(
    cloudwatch: Any,
    job_name: str,
    series: Sequence[MetricSeries],
    start: datetime,
    end: datetime,
    period: int,
) -> None:
    for first in range(0, len(series), _QUERIES_PER_CALL):
        chunk = series[first : first + _QUERIES_PER_CALL]
        queries = [
            {
                "Id": f"m{index}",
                "MetricStat": {
                    "Metric": {
                        "Namespace": NAMESPACE,
                        "MetricName": item.name,
                        "Dimensions": [{"Name": "TrainingJobName", "Value": job_name}],
                    },
                    "Period": period,
                    "Stat": "Average",
                },
                "ReturnData": True,
            }
            for index, item in enumerate(chunk)
        ]
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "MetricDataQueries": queries,
                "StartTime": start,
                "EndTime": end,
                "ScanBy": "TimestampAscending",
            }
            if token:
                kwargs["NextToken"] = token
            page = cloudwatch.get_metric_data(**kwargs)
            for result in page.get("MetricDataResults", []):
                item = chunk[int(str(result["Id"])[1:])]
                item.points += [
                    MetricValue(item.name, float(value), stamp)
                    for stamp, value in zip(result["Timestamps"], result["Values"], strict=False)
                ]
            token = page.get("NextToken")
            if not token:
                break
    for item in series:
        item.points.sort(key=lambda p: p.timestamp or datetime.min)


def run_metrics(
    stepfunctions: Any,
    sagemaker: Any,
    cloudwatch: Any,
    execution_arn: str,
    *,
    group: str | None = None,
    period: int = DEFAULT_PERIOD_SECONDS,
) -> dict[str, list[MetricSeries]]:
    """Every training job of a run (by name, in attempt order) with its metrics over time."""
    _, jobs = read_run(stepfunctions, sagemaker, execution_arn)
    return {job.name: read_series(cloudwatch, job, group=group, period=period) for job in jobs}


__all__ = [
    "DEFAULT_PERIOD_SECONDS",
    "NAMESPACE",
    "MetricSeries",
    "job_groups",
    "metric_names",
    "read_series",
    "run_metrics",
]
