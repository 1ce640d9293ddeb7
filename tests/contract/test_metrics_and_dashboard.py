"""The built-in metric definitions, FinalMetricDataList, and the dashboard body they feed."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from hetero_constructs.contract.dashboard import (
    DashboardInputs,
    dashboard_body,
    layout_text,
    run_pattern,
    widget_metric_names,
)
from hetero_constructs.contract.metrics import (
    builtin_metric_definitions,
    final_metrics,
    groups_of,
    metric_definitions,
    select_group,
)
from hetero_constructs.contract.naming import RunSlot, attempt_job_name
from hetero_constructs.runtime.metrics import data_host_line, interval_line
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.training import TrainingMetric, TrainingSpec
from tests.fixtures.specs import HOMOGENEOUS, spec_dict


def _spec(*overrides: dict[str, object]) -> TrainingSpec:
    reading = read_spec(spec_dict(*overrides))
    assert reading.spec is not None, reading.violations
    return reading.spec


def test_trainers_get_samples_and_data_wait_data_hosts_samples_and_load() -> None:
    spec = _spec({"metric_definitions": [{"Name": "loss", "Regex": "loss=([0-9.]+)"}]})
    names = [m.name for m in builtin_metric_definitions(spec)]
    assert names == [
        "data:samples_per_second",
        "data:producing_fraction",
        "data:credit_wait_fraction",
        "data:send_blocked_fraction",
        "gpu:samples_per_second",
        "gpu:data_wait_fraction",
    ]
    every = metric_definitions(spec)
    assert [m.name for m in every] == ["loss", *names]
    assert metric_definitions(spec, builtin=False) == [TrainingMetric("loss", "loss=([0-9.]+)")]
    # Each definition captures its own group's lines and no other's.
    lines = [
        interval_line("data", 1000.0),
        interval_line("gpu", 800.0, 0.25),
        data_host_line("data", "algo-1", (0.9, 0.05, 0.01), 120.0, 4096.0),
    ]
    captured = {
        m.name: [re.search(m.regex, line).group(1) for line in lines if re.search(m.regex, line)]
        for m in every[1:]
    }
    assert captured == {
        "data:samples_per_second": ["1000.0000"],
        "data:producing_fraction": ["0.9000"],
        "data:credit_wait_fraction": ["0.0500"],
        "data:send_blocked_fraction": ["0.0100"],
        "gpu:samples_per_second": ["800.0000"],
        "gpu:data_wait_fraction": ["0.2500"],
    }


def test_a_users_definition_of_the_same_name_wins() -> None:
    spec = _spec({"metric_definitions": [{"Name": "gpu:samples_per_second", "Regex": "x=(1)"}]})
    every = metric_definitions(spec)
    assert [m.regex for m in every if m.name == "gpu:samples_per_second"] == ["x=(1)"]


def test_homogeneous_jobs_are_one_group_that_trains() -> None:
    groups = groups_of(_spec(HOMOGENEOUS))
    assert [(g.name, g.trains) for g in groups] == [("homogeneousCluster", True)]


def test_final_metrics_skip_what_is_not_a_metric() -> None:
    stamp = datetime(2026, 12, 2, tzinfo=UTC)
    job = {
        "FinalMetricDataList": [
            {"MetricName": "loss", "Value": 0.25, "Timestamp": stamp},
            {"MetricName": "gpu:samples_per_second", "Value": "812.5"},
            {"MetricName": "broken", "Value": "n/a"},
            {"Value": 1.0},
            {"MetricName": "flag", "Value": True},
            "not a mapping",
        ]
    }
    values = final_metrics(job)
    assert [(v.name, v.value) for v in values] == [
        ("loss", 0.25),
        ("gpu:samples_per_second", 812.5),
    ]
    assert values[0].to_dict()["Timestamp"] == stamp.isoformat()
    assert final_metrics({}) == []
    names = [v.name for v in values] + ["data:samples_per_second"]
    assert select_group(names, "gpu", ["data", "gpu"]) == ["loss", "gpu:samples_per_second"]


def _inputs(spec: TrainingSpec, prefix: str = "hetero-example") -> DashboardInputs:
    return DashboardInputs(
        title="Training job Example/Training",
        job_name_prefix=prefix,
        groups=groups_of(spec),
        job_metrics=[m.name for m in spec.metric_definitions],
        state_machine_arn=f"arn:aws:states:us-west-2:111122223333:stateMachine:{prefix}",
        dead_letter_queue_name="Example-DeadLetters",
        region="us-west-2",
    )


def test_every_widget_shows_metrics_of_the_specs_groups_and_definitions() -> None:
    spec = _spec({"metric_definitions": [{"Name": "loss", "Regex": "loss=([0-9.]+)"}]})
    body = dashboard_body(_inputs(spec))
    shown = dict(widget_metric_names(body))
    builtin = {m.name for m in builtin_metric_definitions(spec)}
    defined = {m.name for m in spec.metric_definitions}
    host = {"CPUUtilization", "MemoryUtilization", "GPUUtilization", "GPUMemoryUtilization"}
    runner = {
        "ExecutionsStarted",
        "ExecutionsSucceeded",
        "ExecutionsFailed",
        "ApproximateNumberOfMessagesVisible",
    }
    assert set().union(*shown.values()) == builtin | defined | host | runner
    # One row per group: the CPU group gets CPU and memory, the GPU group GPU and GPU memory.
    assert shown["data (ml.c5.18xlarge x2): CPU utilisation"] == ["CPUUtilization"]
    assert shown["gpu (ml.p4d.24xlarge x2): GPU memory"] == ["GPUMemoryUtilization"]
    assert "gpu: data wait (fraction)" in shown and "data: data wait (fraction)" not in shown
    rows = {w["y"] for w in body["widgets"] if w["type"] == "metric"}
    assert len(rows) == 4  # data, gpu, the job's own metrics, the runner
    for widget in body["widgets"]:
        assert widget["x"] + widget["width"] <= 24


def test_searches_find_every_job_of_the_prefix_and_the_variable_one_run() -> None:
    spec = _spec()
    for prefix in ("hetero-example", "p" * 60):
        body = dashboard_body(_inputs(spec, prefix))
        pattern = run_pattern(prefix)
        job = attempt_job_name(prefix, RunSlot("arn:x:execution:m:run-1", "t", "s", "t"), 0)
        assert job.startswith(pattern)
        searches = [
            entry[0]["expression"]
            for widget in body["widgets"]
            if widget["type"] == "metric"
            for entry in widget["properties"]["metrics"]
            if isinstance(entry[0], dict)
        ]
        assert searches and all(f':\\"{pattern}\\"' in json.dumps(s) for s in searches)
        (variable,) = body["variables"]
        assert variable["pattern"] == variable["defaultValue"] == pattern
        # The runner's widgets name the state machine by its ARN, which the pattern leaves alone.
        runner = [w for w in body["widgets"] if w["properties"].get("title", "").startswith("Run")]
        assert len(runner) == 2
        text = json.dumps(runner)
        assert pattern not in text


@pytest.mark.parametrize("builtin", [True, False])
def test_layout_lists_rows_in_order(builtin: bool) -> None:
    spec = _spec()
    inputs = _inputs(spec)
    body = dashboard_body(
        DashboardInputs(**{**inputs.__dict__, "builtin_metrics": builtin})  # type: ignore[arg-type]
    )
    layout = layout_text(body)
    assert layout.splitlines()[2].startswith("| 1 | data (ml.c5.18xlarge x2): CPU utilisation")
    assert ("gpu: data wait (fraction)" in layout) is builtin
    assert layout.splitlines()[-1].startswith("| 3 | Runs:")
