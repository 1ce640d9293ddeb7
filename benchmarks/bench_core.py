"""How fast the core validates a spec and builds its request, after import.

Runs ``plan()`` (every rule, then the request) on the example spec in rounds of a fixed number
of plans, after one warm-up call that loads botocore's SageMaker model. Each round's rate is
its plans over its wall time; the machine is shared, so the figure is the median of the
rounds. The bytecode instructions and Python calls of one plan are counted too: they do not
depend on the machine's load. Prints figures measured in this run; the last line is
``specs per second: N``.
Usage: ``.venv/bin/python benchmarks/bench_core.py [--rounds R] [--plans P]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hetero_constructs import TrainingSpec, load_spec_file, plan

EXAMPLE = (
    Path(__file__).resolve().parents[1] / "examples" / "specs" / "hetero_torch_distributed.json"
)


def one_round(spec: TrainingSpec, plans: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``plans`` plans; every one must give a request."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(plans):
        if plan(spec).request is None:
            raise SystemExit(f"the benchmark spec is invalid: {plan(spec).violations}")
    return time.perf_counter() - wall, time.process_time() - cpu


def python_operations(spec: TrainingSpec) -> tuple[int, int]:
    """Bytecode instructions and Python calls one ``plan()`` executes (a tracer counts them).

    Unlike time, the count does not move with the load of a shared machine.
    """
    counts = [0, 0]

    def trace(frame: Any, event: str, argument: Any) -> Any:
        if event == "call":
            counts[1] += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            counts[0] += 1
        return trace

    sys.settrace(trace)
    try:
        plan(spec)
    finally:
        sys.settrace(None)
    return counts[0], counts[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15, help="rounds measured")
    parser.add_argument("--plans", type=int, default=1000, help="plans per round")
    args = parser.parse_args()
    spec = load_spec_file(EXAMPLE)
    start = time.perf_counter()
    plan(spec)  # loads botocore's service model and builds the validators once per process
    first = time.perf_counter() - start
    operations, calls = python_operations(spec)
    rounds = [one_round(spec, args.plans) for _ in range(args.rounds)]
    rates = sorted(args.plans / wall for wall, _ in rounds)
    cpu_rates = sorted(args.plans / cpu for _, cpu in rounds if cpu > 0)
    print(f"spec: {EXAMPLE.name} (2 instance groups, torch_distributed, 1 channel)")
    print(f"first plan in a process (loads the service model): {first * 1000:.1f} ms")
    print(f"Python per plan: {operations} bytecode instructions, {calls} calls")
    print(f"rounds: {args.rounds} of {args.plans} plans")
    print(f"specs per second by round (wall): min {rates[0]:.0f}, max {rates[-1]:.0f}")
    print(f"median per spec: {1e6 / statistics.median(rates):.0f} us")
    if cpu_rates:
        print(f"specs per CPU second (median of rounds): {statistics.median(cpu_rates):.0f}")
    print(f"specs per second: {statistics.median(rates):.0f}")


if __name__ == "__main__":
    main()
