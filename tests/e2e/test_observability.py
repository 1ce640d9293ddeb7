"""Seeing whether the cluster pays off, offline end to end: the example job run locally (its code
bundle a stand-in, tests/fixtures/local_assets/observed_job, that writes what MetricsReporter
writes) logs its hosts' start and interval lines, SageMaker's metric extraction applies the
request's definitions to them, and the task's output, ``hetero-train metrics``, ``status`` and
``logs --group`` show what the run did. The example's dashboard shows exactly the metrics the
spec and its groups define."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.cli import main
from hetero_constructs.cli.metrics import chart
from hetero_constructs.contract.dashboard import widget_metric_names
from hetero_constructs.contract.metrics import MetricValue, builtin_metric_definitions
from hetero_constructs.local import LocalCloud
from hetero_constructs.runs.metrics import MetricSeries
from hetero_constructs.runtime.metrics import START_LINE
from tests.fixtures.example_app import Synthesized
from tests.fixtures.host_jobs import create_bucket, publish_file_assets, sourcedir

STAND_IN = Path(__file__).parents[1] / "fixtures" / "local_assets" / "observed_job"

BUILTIN = {
    "data:samples_per_second",
    "data:producing_fraction",
    "data:credit_wait_fraction",
    "data:send_blocked_fraction",
    "gpu:samples_per_second",
    "gpu:data_wait_fraction",
}
SCRIPT = {"train_loss", "train_accuracy"}  # the example script's own (app.py: script_metrics)


@pytest.fixture(scope="module")
def run(example: Synthesized) -> Iterator[tuple[LocalCloud, Any]]:
    with LocalCloud() as local:
        local.deploy(example.template, template_dir=example.outdir)
        template = example.outdir / f"{example.stack.stack_name}.template.json"
        publish_file_assets(local, template, code=sourcedir(STAND_IN))
        create_bucket(local.client("s3"), "example-training-data", local.region)
        # The data channel's prefix must hold data, or CreateTrainingJob refuses the job.
        local.client("s3").put_object(
            Bucket="example-training-data", Key="datasets/train/part-0.csv", Body=b"x\n"
        )
        (machine,) = local.state_machines
        yield local, local.run(machine, {}, name="metrics-run", timeout=120)


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_the_request_defines_the_builtin_metrics_after_the_specs(
    run: tuple[LocalCloud, Any],
) -> None:
    _, result = run
    (request,) = result.submitted_requests
    definitions = request["AlgorithmSpecification"]["MetricDefinitions"]
    assert [d["Name"] for d in definitions][: len(SCRIPT)] == ["train_loss", "train_accuracy"]
    assert {d["Name"] for d in definitions} == SCRIPT | BUILTIN


def test_the_task_output_carries_the_final_value_of_each_metric(
    run: tuple[LocalCloud, Any],
) -> None:
    _, result = run
    assert result.status == "SUCCEEDED"
    final = {m["MetricName"]: m["Value"] for m in result.output["FinalMetricDataList"]}
    assert set(final) == BUILTIN  # the stand-in writes no line of the script's own
    assert final["gpu:data_wait_fraction"] == 0.05  # the last line's value
    assert final["gpu:samples_per_second"] > 0
    assert all(isinstance(m["Timestamp"], str) for m in result.output["FinalMetricDataList"])


def test_metrics_prints_each_metric_over_time_ending_at_its_final_value(
    run: tuple[LocalCloud, Any],
) -> None:
    _, result = run
    code, text = _cli("metrics", result.execution_arn, "--json")
    assert code == 0
    (job,) = json.loads(text)["jobs"]
    series = {item["name"]: item for item in job["metrics"]}
    assert set(series) == SCRIPT | BUILTIN
    for name in SCRIPT:  # the stand-in writes no line of the script's own
        assert series[name]["points"] == [] and series[name]["final"] is None
    for item in (series[name] for name in BUILTIN):
        # A run of seconds: one point per minute, the average of the lines' values in it.
        assert item["points"] and item["final"] is not None
    waits = [p["value"] for p in series["gpu:data_wait_fraction"]["points"]]
    assert waits == [pytest.approx((0.5 + 0.2 + 0.05) / 3)]  # both trainers wrote the same
    assert series["gpu:samples_per_second"]["group"] == "gpu"

    code, text = _cli("metrics", result.execution_arn, "--json", "--group", "data")
    (job,) = json.loads(text)["jobs"]
    assert [item["name"] for item in job["metrics"]] == [
        "train_loss",  # the script's own have no group in their names
        "train_accuracy",
        "data:samples_per_second",
        "data:producing_fraction",
        "data:credit_wait_fraction",
        "data:send_blocked_fraction",
    ]

    code, text = _cli("metrics", result.execution_arn)
    assert code == 0
    assert "gpu:data_wait_fraction: " in text and ", final " in text

    code, text = _cli("metrics", result.execution_arn, "--group", "cpu")
    assert code == 1


def test_status_shows_the_final_values(run: tuple[LocalCloud, Any]) -> None:
    _, result = run
    code, text = _cli("status", result.execution_arn)
    assert code == 0
    assert re.search(r"gpu:samples_per_second\s+[0-9.e+]+ \(final\)", text)
    code, text = _cli("status", result.execution_arn, "--json")
    (job,) = json.loads(text)["jobs"]
    assert {m["MetricName"] for m in job["finalMetricDataList"]} == BUILTIN


def test_logs_know_each_hosts_group_from_its_first_line(run: tuple[LocalCloud, Any]) -> None:
    _, result = run
    code, text = _cli("logs", result.execution_arn, "--json")
    assert code == 0
    lines = [json.loads(line) for line in text.splitlines()]
    first: dict[str, dict[str, Any]] = {}
    for line in lines:
        first.setdefault(line["host"], line)
    assert len(first) == 4
    starts = {
        line["host"]: found.group("group")
        for line in lines
        if (found := START_LINE.search(line["message"])) and found.group("host") == line["host"]
    }
    assert len(starts) == 4  # one start line per host
    for host, line in first.items():
        assert line["group"] == starts[host]  # known from the host's first line on
    assert {line["group"] for line in first.values()} == {"data", "gpu"}
    code, text = _cli("logs", result.execution_arn, "--json", "--group", "data")
    data = [json.loads(line) for line in text.splitlines()]
    assert data and {line["group"] for line in data} == {"data"}
    assert all("instance_group=gpu" not in line["message"] for line in data)


def test_the_example_dashboard_shows_the_specs_groups_and_definitions(
    example: Synthesized,
) -> None:
    (body_json,) = [
        resource["Properties"]["DashboardBody"]
        for resource in example.template["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Dashboard"
    ]
    parts = body_json["Fn::Join"][1]
    body = json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))
    spec = example.stack.job.spec
    defined = {m.name for m in spec.metric_definitions}
    assert {m.name for m in builtin_metric_definitions(spec)} <= defined
    groups = {g.name: g.instance_type for g in spec.instance_groups}
    host_metrics = {"GPUUtilization", "GPUMemoryUtilization", "CPUUtilization", "MemoryUtilization"}
    runner = {"ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed"}
    for title, names in widget_metric_names(body):
        for name in names:
            group = title.split(" ", 1)[0].rstrip(":")
            if name in defined:
                assert name.startswith(f"{group}:") or group not in groups, title
            elif name in host_metrics:
                assert group in groups, title
                gpu = groups[group].startswith("ml.p")
                assert name.startswith("GPU") is gpu, title
            else:
                assert name in runner | {"ApproximateNumberOfMessagesVisible"}, title
    shown = {name for _, names in widget_metric_names(body) for name in names}
    assert defined <= shown


def test_a_chart_is_drawn_with_plotext() -> None:
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 12, 2, tzinfo=UTC)
    points = [MetricValue("loss", 2.0 / (i + 1), start + timedelta(minutes=i)) for i in range(30)]
    text = chart(MetricSeries("loss", None, points), colour=False, width=60, height=10)
    lines = text.splitlines()
    assert "loss" in lines[0] and len(lines) == 10
    assert "\x1b[" not in text and any("⠁" <= c <= "⣿" for c in text)


def test_the_python_run_api_reads_the_same_metrics(run: tuple[LocalCloud, Any]) -> None:
    from hetero_constructs.runs.training_run import TrainingRun

    _, result = run
    (series,) = TrainingRun.attach(result.execution_arn).metrics(group="gpu").values()
    gpu = {"gpu:samples_per_second", "gpu:data_wait_fraction"}
    assert {item.name for item in series} == gpu | SCRIPT  # SCRIPT: no group in their names
    assert all(item.points and item.final is not None for item in series if item.name in gpu)
