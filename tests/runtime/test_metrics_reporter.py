"""The reporter's lines: the start line names the host's group, interval lines carry samples per
second and the data-wait fraction, and the built-in metric definitions capture exactly them."""

from __future__ import annotations

import io
import re
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetero_constructs.runtime.metrics import (
    DATA_WAIT_FRACTION,
    SAMPLES_PER_SECOND,
    START_LINE,
    MetricsReporter,
    interval_line,
    metric_regex,
    start_line,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_start_line_names_the_group_and_parses_back() -> None:
    line = start_line("algo-2", "data", "data", "ml.c5.xlarge")
    match = START_LINE.search(f"2026-12-02 12:00:00 {line}")
    assert match is not None
    assert match.group("host", "group", "role", "instance_type") == (
        "algo-2",
        "data",
        "data",
        "ml.c5.xlarge",
    )


def test_interval_lines_report_samples_and_wait_per_interval() -> None:
    clock, out = FakeClock(), io.StringIO()
    reporter = MetricsReporter(
        "gpu", host="algo-3", role="distributed", interval_seconds=10, stream=out, clock=clock
    )
    clock.now += 4
    reporter.record(400, waited_seconds=1.0)
    assert out.getvalue().count("\n") == 1  # only the start line: the interval is not over
    clock.now += 6
    reporter.record(600, waited_seconds=1.5)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[hetero-train] host=algo-3 instance_group=gpu role=distributed")
    assert lines[1] == (
        "[hetero-train] instance_group=gpu samples_per_second=100.0000 data_wait_fraction=0.2500"
    )
    clock.now += 5
    reporter.record(50)
    reporter.close()
    reporter.close()
    assert out.getvalue().splitlines()[2:] == [
        "[hetero-train] instance_group=gpu samples_per_second=10.0000 data_wait_fraction=0.0000"
    ]


def test_timed_measures_the_wait_for_each_batch() -> None:
    clock, out = FakeClock(), io.StringIO()
    reporter = MetricsReporter("gpu", interval_seconds=100, stream=out, clock=clock)

    def slow_batches() -> object:
        for batch in ([1, 2], [3, 4]):
            clock.now += 3  # the loader blocks for 3 s per batch
            yield batch

    for batch in reporter.timed(slow_batches()):
        clock.now += 2  # the step itself
        reporter.record(len(batch))
    reporter.close()
    last = out.getvalue().splitlines()[-1]
    assert last.endswith("samples_per_second=0.4000 data_wait_fraction=0.6000")


def test_data_hosts_report_no_wait_and_groups_with_spaces_stay_one_word() -> None:
    clock, out = FakeClock(), io.StringIO()
    reporter = MetricsReporter(
        "data loaders", waits_for_data=False, interval_seconds=1, stream=out, clock=clock
    )
    clock.now += 2
    reporter.record(10)
    line = out.getvalue().splitlines()[-1]
    assert line == "[hetero-train] instance_group=data_loaders samples_per_second=5.0000"
    assert re.search(metric_regex("data loaders", SAMPLES_PER_SECOND), line)
    assert not re.search(metric_regex("data loaders", DATA_WAIT_FRACTION), line)


def test_bad_arguments_say_what_to_pass() -> None:
    with pytest.raises(ValueError, match="interval_seconds must be above 0"):
        MetricsReporter("gpu", interval_seconds=0, stream=io.StringIO())
    reporter = MetricsReporter("gpu", stream=io.StringIO())
    with pytest.raises(ValueError, match="cannot be negative"):
        reporter.record(-1)


def test_threads_recording_at_once_lose_no_sample() -> None:
    clock, out = FakeClock(), io.StringIO()
    reporter = MetricsReporter("gpu", interval_seconds=1e9, stream=out, clock=clock)

    def work() -> None:
        for _ in range(1000):
            reporter.record(1)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    clock.now += 1
    reporter.close()
    assert out.getvalue().splitlines()[-1].split()[2] == "samples_per_second=4000.0000"


@settings(deadline=None)
@given(
    group=st.text(min_size=1, max_size=64).filter(lambda s: s.strip() == s and "\n" not in s),
    samples=st.floats(min_value=0, max_value=1e12, allow_nan=False),
    wait=st.floats(min_value=0, max_value=5, allow_nan=False),
)
def test_the_definitions_capture_what_the_lines_write(
    group: str, samples: float, wait: float
) -> None:
    line = interval_line(group, samples, wait)
    speed = re.search(metric_regex(group, SAMPLES_PER_SECOND), line)
    waited = re.search(metric_regex(group, DATA_WAIT_FRACTION), line)
    assert speed is not None and waited is not None
    assert float(speed.group(1)) == pytest.approx(samples, rel=1e-6, abs=1e-4)
    assert float(waited.group(1)) == pytest.approx(min(wait, 1.0), abs=1e-4)
    # Another group's definitions never capture this group's line.
    assert not re.search(metric_regex(group + "x", SAMPLES_PER_SECOND), line)


def test_a_data_feeds_own_stats_make_the_interval_line() -> None:
    from hetero_constructs.runtime.data.stats import DataStats

    clock, out = FakeClock(), io.StringIO()
    reporter = MetricsReporter("gpu", interval_seconds=30, stream=out, clock=clock)
    assert not reporter.due()
    clock.now += 30
    assert reporter.due()
    reporter.write_stats(DataStats(batches=10, samples=640, seconds=32.0, wait_seconds=8.0))
    assert out.getvalue().splitlines()[-1] == (
        "[hetero-train] instance_group=gpu samples_per_second=20.0000 data_wait_fraction=0.2500"
    )
    assert not reporter.due()  # the interval starts again
