"""How fast the core validates a spec and builds its request, after import.

Prints figures measured in this run; the last line is ``specs per second: N``.
Usage: ``.venv/bin/python benchmarks/bench_core.py [--seconds S]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hetero_constructs.core import load_spec_file, plan
from hetero_constructs.core.spec import TrainingSpec

EXAMPLE = (
    Path(__file__).resolve().parents[1] / "examples" / "specs" / "hetero_torch_distributed.json"
)


def one_round(spec: TrainingSpec) -> float:
    start = time.perf_counter()
    result = plan(spec)
    elapsed = time.perf_counter() - start
    if result.request is None:
        raise SystemExit(f"the benchmark spec is invalid: {result.violations}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0, help="how long to measure")
    args = parser.parse_args()
    spec = load_spec_file(EXAMPLE)
    first = one_round(spec)  # loads botocore's service model once per process
    timings: list[float] = []
    deadline = time.perf_counter() + args.seconds
    while time.perf_counter() < deadline:
        timings.append(one_round(spec))
    timings.sort()
    print(f"spec: {EXAMPLE.name} (2 instance groups, torch_distributed, 1 channel)")
    print(f"first plan in a process (loads the service model): {first * 1000:.1f} ms")
    print(f"plans measured: {len(timings)}")
    print(f"median per spec: {statistics.median(timings) * 1e6:.0f} us")
    print(f"p99 per spec: {timings[int(len(timings) * 0.99) - 1] * 1e6:.0f} us")
    print(f"specs per second: {len(timings) / sum(timings):.0f}")


if __name__ == "__main__":
    main()
