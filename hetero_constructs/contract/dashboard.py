"""The CloudWatch dashboard of a training job, as a plain dashboard body (no CDK).

One row per instance group: GPU utilisation and GPU memory for a GPU group, CPU utilisation and
memory for a CPU group (SageMaker's host metrics, namespace ``/aws/sagemaker/TrainingJobs``,
dimension ``Host``), then the group's samples per second and, for a group that trains, its data
wait, or for a data group its hosts' load: the shares of their workers' time spent producing,
waiting for the trainers' credits and blocked sending (the built-in metric definitions,
dimension ``TrainingJobName``). Then a row of the spec's
own metrics, and one for the runner: executions started, succeeded and failed, and the dead
letters.

Every graph is a ``SEARCH`` for the start every job name of the job has (``<prefix>-``), so it
renders runs that do not exist when the stack deploys. The dashboard's ``run`` variable holds
that start: left as it is, every run in the time range shows (the latest at the right edge); set
to a training job's name (``hetero-train list`` shows them), only that run does. (The state
machine's ARN ends with the bare prefix, without the ``-``: the variable leaves it alone.)

SageMaker does not tell which host is in which group: GPU metrics come from GPU hosts only, but
CPU and memory come from every host of the job, each labelled with its host (the start lines,
``hetero-train logs --group``, tell which host is in which group).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hetero_constructs.contract.metrics import GroupMetrics, metric_name
from hetero_constructs.contract.naming import job_name_stem
from hetero_constructs.runtime.metrics import (
    DATA_HOST_NUMBERS,
    DATA_WAIT_FRACTION,
    SAMPLES_PER_SECOND,
)
from hetero_constructs.service.catalog import is_gpu

NAMESPACE = "/aws/sagemaker/TrainingJobs"
#: SageMaker's host metrics of training jobs (SageMaker developer guide, "Monitor Amazon
#: SageMaker with Amazon CloudWatch", training job metrics).
GPU_HOST_METRICS = (("GPUUtilization", "GPU utilisation"), ("GPUMemoryUtilization", "GPU memory"))
CPU_HOST_METRICS = (("CPUUtilization", "CPU utilisation"), ("MemoryUtilization", "memory"))
RUNNER_EXECUTION_METRICS = ("ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed")
DEAD_LETTER_METRIC = "ApproximateNumberOfMessagesVisible"
RUN_VARIABLE = "run"
_WIDTH, _HEIGHT, _ROW = 6, 6, 24
_NUMBER_TITLES = {SAMPLES_PER_SECOND: "samples/s", DATA_WAIT_FRACTION: "data wait (fraction)"}


@dataclass(frozen=True)
class DashboardInputs:
    """What a job's dashboard shows, with every name it needs (tokens are fine: the constructs
    render the body with ``Stack.to_json_string``)."""

    title: str
    job_name_prefix: str
    groups: Sequence[GroupMetrics]
    #: The spec's own metric names (``metric_definitions``).
    job_metrics: Sequence[str]
    state_machine_arn: str
    dead_letter_queue_name: str
    region: str
    builtin_metrics: bool = True
    period_seconds: int = 60


def run_pattern(job_name_prefix: str) -> str:
    """What every job name of the prefix starts with, and the ``run`` variable's pattern."""
    return f"{job_name_stem(job_name_prefix)}-"


def _search(dimension: str, metric: str, names: str, period: int) -> str:
    # Exact metric name; the dimension's value (a job's name, or its host "<job name>/algo-N")
    # must hold ``names`` as a phrase of its tokens.
    return (
        f'SEARCH(\'{{{NAMESPACE},{dimension}}} MetricName="{metric}" '
        f"{dimension}:\"{names}\"', 'Average', {period})"
    )


def _graph(
    inputs: DashboardInputs, title: str, metrics: list[list[Any]], x: int, y: int, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "metric",
        "x": x,
        "y": y,
        "width": _WIDTH,
        "height": _HEIGHT,
        "properties": {
            "title": title,
            "view": "timeSeries",
            "region": inputs.region,
            "period": inputs.period_seconds,
            "stat": "Average",
            "metrics": metrics,
            **extra,
        },
    }


def _searched(
    inputs: DashboardInputs, title: str, dimension: str, metric: str, x: int, y: int
) -> dict[str, Any]:
    expression = _search(
        dimension, metric, run_pattern(inputs.job_name_prefix), inputs.period_seconds
    )
    return _graph(inputs, title, [[{"expression": expression, "id": "e1"}]], x, y)


def _group_row(inputs: DashboardInputs, group: GroupMetrics, y: int) -> list[dict[str, Any]]:
    gpu = is_gpu(group.instance_type)
    host_metrics = GPU_HOST_METRICS if gpu else CPU_HOST_METRICS
    about = f"{group.name} ({group.instance_type} x{group.instance_count})"
    widgets = [
        _searched(inputs, f"{about}: {what}", "Host", metric, index * _WIDTH, y)
        for index, (metric, what) in enumerate(host_metrics)
    ]
    if inputs.builtin_metrics:
        load = [number for number in group.numbers if number in DATA_HOST_NUMBERS]
        for number in group.numbers:
            if number in load:
                continue
            widgets.append(
                _searched(
                    inputs,
                    f"{group.name}: {_NUMBER_TITLES[number]}",
                    "TrainingJobName",
                    metric_name(group.name, number),
                    len(widgets) * _WIDTH,
                    y,
                )
            )
        if load:  # one graph: the shares of the data hosts' time, side by side
            pattern = run_pattern(inputs.job_name_prefix)
            expressions = [
                {
                    "expression": _search(
                        "TrainingJobName",
                        metric_name(group.name, number),
                        pattern,
                        inputs.period_seconds,
                    ),
                    "id": f"e{index + 1}",
                    "label": number,
                }
                for index, number in enumerate(load)
            ]
            title = f"{group.name}: data hosts' time (producing, credit wait, send blocked)"
            widgets.append(
                _graph(inputs, title, [[e] for e in expressions], len(widgets) * _WIDTH, y)
            )
    return widgets


def _runner_row(inputs: DashboardInputs, y: int) -> list[dict[str, Any]]:
    executions = [
        ["AWS/States", metric, "StateMachineArn", inputs.state_machine_arn]
        for metric in RUNNER_EXECUTION_METRICS
    ]
    dead_letters = [["AWS/SQS", DEAD_LETTER_METRIC, "QueueName", inputs.dead_letter_queue_name]]
    return [
        _graph(inputs, "Runs: executions started, succeeded, failed", executions, 0, y, stat="Sum"),
        _graph(inputs, "Runner: dead letters", dead_letters, _WIDTH, y, stat="Maximum"),
    ]


def dashboard_body(inputs: DashboardInputs) -> dict[str, Any]:
    """The dashboard body (CloudWatch's "Dashboard Body Structure") of one training job."""
    pattern = run_pattern(inputs.job_name_prefix)
    widgets: list[dict[str, Any]] = [
        {
            "type": "text",
            "x": 0,
            "y": 0,
            "width": _ROW,
            "height": 2,
            "properties": {
                "markdown": (
                    f"## {inputs.title}\n"
                    f"Runs named `{pattern}…`: one row per instance group, then the job's own "
                    "metrics and the runner. Set the **run** variable to a training job's name "
                    "to see that run alone."
                )
            },
        }
    ]
    y = 2
    for group in inputs.groups:
        widgets += _group_row(inputs, group, y)
        y += _HEIGHT
    per_row = _ROW // _WIDTH
    for index, metric in enumerate(inputs.job_metrics):
        if index and index % per_row == 0:
            y += _HEIGHT
        widgets.append(
            _searched(inputs, metric, "TrainingJobName", metric, (index % per_row) * _WIDTH, y)
        )
    if inputs.job_metrics:
        y += _HEIGHT
    widgets += _runner_row(inputs, y)
    return {
        "start": "-PT6H",
        "widgets": widgets,
        "variables": [
            {
                "type": "pattern",
                "pattern": pattern,
                "inputType": "input",
                "id": RUN_VARIABLE,
                "label": "run (job name or prefix)",
                "defaultValue": pattern,
                "visible": True,
            }
        ],
    }


def widget_metric_names(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Each metric widget's title and the metric names it shows (from its ``SEARCH``
    expressions and its plain metrics): what tests check against the spec."""
    found: list[tuple[str, list[str]]] = []
    for widget in body.get("widgets", []):
        if widget.get("type") != "metric":
            continue
        names: list[str] = []
        for entry in widget["properties"].get("metrics", []):
            if entry and isinstance(entry[-1], dict) and "expression" in entry[-1]:
                expression = str(entry[-1]["expression"])
                names.append(expression.split('MetricName="', 1)[1].split('"', 1)[0])
            else:
                names.append(str(entry[1]))
        found.append((str(widget["properties"].get("title")), names))
    return found


def layout_text(body: dict[str, Any]) -> str:
    """The dashboard's rows and widgets as Markdown (``docs/observability.md``)."""
    rows: dict[int, list[str]] = {}
    for widget in body.get("widgets", []):
        if widget.get("type") != "metric":
            continue
        rows.setdefault(int(widget["y"]), []).append(str(widget["properties"]["title"]))
    lines = ["| Row | Widgets |", "| --- | --- |"]
    lines += [
        f"| {number} | {' · '.join(titles)} |"
        for number, (_, titles) in enumerate(sorted(rows.items()), start=1)
    ]
    return "\n".join(lines) + "\n"


__all__ = [
    "CPU_HOST_METRICS",
    "DEAD_LETTER_METRIC",
    "GPU_HOST_METRICS",
    "NAMESPACE",
    "RUNNER_EXECUTION_METRICS",
    "RUN_VARIABLE",
    "DashboardInputs",
    "dashboard_body",
    "layout_text",
    "run_pattern",
    "widget_metric_names",
]
