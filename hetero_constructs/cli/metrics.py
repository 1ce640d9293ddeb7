"""Metrics on the terminal: a chart of one metric (plotext), and ``status``'s rows."""

from __future__ import annotations

from typing import Any

from hetero_constructs.runs.execution import TrainingJob
from hetero_constructs.runs.metrics import MetricSeries, read_series


def chart(item: MetricSeries, *, width: int = 72, height: int = 12, colour: bool = True) -> str:
    """A small line chart of one metric over the minutes since its first value (plotext)."""
    import plotext as plt

    points = [p for p in item.points if p.timestamp is not None]
    if not points:
        return ""
    first = points[0].timestamp
    assert first is not None
    minutes = [(p.timestamp - first).total_seconds() / 60 for p in points]  # type: ignore[operator]
    plt.clear_figure()
    plt.plot(minutes, [p.value for p in points], marker="braille")
    plt.plotsize(width, height)
    plt.title(item.name)
    plt.xlabel("minutes since the first value")
    plt.theme("clear")
    text = str(plt.build())
    plt.clear_figure()
    text = text if colour else str(plt.uncolorize(text))
    return "\n".join(line.rstrip() for line in text.splitlines())


def metric_rows(cloudwatch: Any, job: TrainingJob) -> list[list[str]]:
    """``status``'s rows of a job's metrics: the final values of a job that ended (no call),
    the latest of one that runs (CloudWatch)."""
    series = read_series(None if job.ended else cloudwatch, job)
    what = "final" if job.ended else "latest"
    return [
        [f"  {item.name}", f"{value_text(item.latest)} ({what})"]
        for item in series
        if item.latest is not None
    ]


def value_text(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.4e}"


__all__ = ["chart", "metric_rows", "value_text"]
