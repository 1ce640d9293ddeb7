"""The data group's own numbers (issue 32, item 6): each data host writes how its workers
spent their time, producing, waiting for the trainers' credits or blocked sending, and what
each rank was sent, as metric lines the built-in definitions capture."""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hetero_constructs.contract.metrics import GroupMetrics, builtin_metric_definitions, groups_of
from hetero_constructs.runtime.data.arrays import describe
from hetero_constructs.runtime.data.stats import HostLoad
from hetero_constructs.runtime.metrics import DATA_HOST_NUMBERS, metric_regex
from hetero_constructs.spec.file.reader import read_spec
from tests.fixtures.data_plane import EXIT_SECONDS, Cluster, busy_batches, ids_batches
from tests.fixtures.specs import spec_dict


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    started = Cluster()
    yield started
    started.stop()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def numbers(line: str) -> dict[str, float]:
    return {key: float(value) for key, value in re.findall(r"(\w+)=([0-9.]+)(?= |$)", line)}


def test_host_load_writes_shares_of_the_workers_time_and_counts_per_rank() -> None:
    clock, stream = Clock(), io.StringIO()
    load = HostLoad("cpu", "algo-2", workers=2, interval=10.0, stream=stream, clock=clock)
    clock.now += 5
    load.update(0, {"produce": 4.0, "credit_wait": 1.0, "send_blocked": 0.0}, {0: [10, 1000]})
    assert stream.getvalue() == ""  # the interval is not over
    clock.now += 5
    load.update(1, {"produce": 2.0, "credit_wait": 7.0, "send_blocked": 1.0}, {1: [30, 3000]})
    host, rank0, rank1 = stream.getvalue().splitlines()
    assert numbers(host) == {
        "producing_fraction": 0.3,  # 6 of 2 workers x 10 s
        "credit_wait_fraction": 0.4,
        "send_blocked_fraction": 0.05,
        "batches_per_second": 4.0,
        "bytes_per_second": 400.0,
    }
    assert "data_host=algo-2" in host
    assert rank0.endswith("data_host=algo-2 rank=0 batches=10 bytes=1000")
    assert rank1.endswith("rank=1 batches=30 bytes=3000")
    # The next interval counts from here: only what changed since.
    clock.now += 10
    load.update(0, {"produce": 14.0, "credit_wait": 1.0, "send_blocked": 0.0}, {0: [20, 2000]})
    assert numbers(stream.getvalue().splitlines()[3])["producing_fraction"] == 0.5


def test_the_builtin_definitions_of_a_data_group_capture_its_lines() -> None:
    group = GroupMetrics("cpu-data", "ml.c5.xlarge", 2, trains=False)
    assert set(DATA_HOST_NUMBERS) <= set(group.numbers)
    stream = io.StringIO()
    load = HostLoad("cpu-data", "algo-3", 1, 1.0, stream=stream, clock=Clock())
    load.seconds[0] = {"produce": 0.0, "credit_wait": 0.0, "send_blocked": 0.0}
    load.since -= 1
    load.write()
    line = stream.getvalue().splitlines()[0]
    for number in DATA_HOST_NUMBERS:
        found = re.search(metric_regex("cpu-data", number), line)
        assert found is not None and found.group(1) == "0.0000"
    assert re.search(metric_regex("gpu", DATA_HOST_NUMBERS[0]), line) is None


def test_a_spec_with_a_data_group_gets_definitions_for_its_load() -> None:
    reading = read_spec(spec_dict())  # a data group and a GPU group
    assert reading.spec is not None
    spec = reading.spec
    data_groups = [group.name for group in groups_of(spec) if not group.trains]
    names = {metric.name for metric in builtin_metric_definitions(spec)}
    assert data_groups
    for group in data_groups:
        assert {f"{group}:{number}" for number in DATA_HOST_NUMBERS} <= names


def run_host(cluster: Cluster, tmp_path: Path, make_batches: object, step: float) -> list[str]:
    out = tmp_path / "serve.out"
    cluster.start(
        make_batches,
        workers=1,
        metrics_interval=0.5,
        instance_group="cpu",
        stdout_path=str(out),
    )
    with cluster.remote(rank=0, world_size=1, epochs=1, prefetch=2) as remote:
        received = size = 0
        for batch in remote:
            received += 1
            size += describe(batch)[2]
            time.sleep(step)  # the training step
    assert cluster.hosts[0].wait(EXIT_SECONDS) == ("ok", "")
    lines = out.read_text().splitlines()
    assert lines[-1].endswith(f"rank=0 batches={received} bytes={size}")
    return [line for line in lines if "producing_fraction" in line]


def test_busy_producers_show_as_producing(cluster: Cluster, tmp_path: Path) -> None:
    lines = run_host(cluster, tmp_path, busy_batches, 0.0)
    producing = max(numbers(line)["producing_fraction"] for line in lines)
    waiting = min(numbers(line)["credit_wait_fraction"] for line in lines)
    assert producing > 0.5 and waiting < producing


def test_slow_trainers_show_as_credit_wait(cluster: Cluster, tmp_path: Path) -> None:
    lines = run_host(cluster, tmp_path, ids_batches(60, batch=2), 0.03)
    waiting = max(numbers(line)["credit_wait_fraction"] for line in lines)
    producing = min(numbers(line)["producing_fraction"] for line in lines)
    assert waiting > 0.5 and producing < 0.2


def test_a_closed_stdout_does_not_stop_a_data_host() -> None:
    stream = io.StringIO()
    stream.close()
    clock = Clock()
    load = HostLoad("cpu", "algo-2", 1, 1.0, stream=stream, clock=clock)
    clock.now += 2
    load.update(0, {"produce": 1.0}, {0: [1, 2]})  # writes nothing, raises nothing
    assert load.since == clock.now  # the interval was written (to nowhere)
    assert load.totals()[1] == {0: [1, 2]}
