"""What SageMaker makes of a training job's log lines: its ``MetricDefinitions`` applied.

Every regex is applied to every line a host writes, as it is written; the first group's value
becomes a CloudWatch point (namespace ``/aws/sagemaker/TrainingJobs``, dimension
``TrainingJobName``) at the line's own time, and each metric's last value is the job's
``FinalMetricDataList``. Nothing is made up: a metric no line matched has no value.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

NAMESPACE = "/aws/sagemaker/TrainingJobs"


class JobMetrics:
    """The metrics of one job, from its lines (written into moto's CloudWatch directly)."""

    def __init__(
        self,
        job_name: str,
        definitions: Sequence[Mapping[str, Any]],
        account: str,
        region: str,
    ) -> None:
        self.job_name = job_name
        self.account = account
        self.region = region
        self._patterns: list[tuple[str, re.Pattern[str]]] = []
        for definition in definitions:
            try:
                pattern = re.compile(str(definition["Regex"]))
            except (re.error, KeyError):
                continue  # SageMaker's validation refuses these at CreateTrainingJob
            self._patterns.append((str(definition.get("Name")), pattern))
        self._last: dict[str, tuple[datetime, float]] = {}
        self._lock = threading.Lock()

    def line(self, moment: datetime, text: str) -> None:
        """Apply every definition to one line written at ``moment``."""
        points = []
        for name, pattern in self._patterns:
            found = pattern.search(text)
            if found is None or not found.groups():
                continue
            try:
                value = float(found.group(1))
            except (TypeError, ValueError):
                continue
            points.append((name, value))
        if not points:
            return
        stamp = moment.astimezone(UTC).replace(tzinfo=None)
        data = [
            {
                "MetricName": name,
                "Dimensions": [{"Name": "TrainingJobName", "Value": self.job_name}],
                "Timestamp": stamp,
                "Value": value,
            }
            for name, value in points
        ]
        from moto.cloudwatch.models import cloudwatch_backends

        with self._lock:
            for name, value in points:
                self._last[name] = (moment, value)
            cloudwatch_backends[self.account][self.region].put_metric_data(NAMESPACE, data)

    def final(self) -> list[dict[str, Any]]:
        """``FinalMetricDataList``: each metric's last value and when it was written."""
        with self._lock:
            return [
                {"MetricName": name, "Value": value, "Timestamp": moment}
                for name, (moment, value) in self._last.items()
            ]


__all__ = ["NAMESPACE", "JobMetrics"]
