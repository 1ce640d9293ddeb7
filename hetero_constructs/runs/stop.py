"""Stopping a training run: its execution, and its training jobs still in progress."""

from __future__ import annotations

from dataclasses import dataclass

from botocore.exceptions import ClientError

from hetero_constructs.runs.clients import RunClients, error_code
from hetero_constructs.runs.execution import (
    JobFinder,
    describe_execution,
    describe_job,
    merge_jobs,
)

STOP_ERROR = "hetero-train.Stopped"


@dataclass(frozen=True)
class StopOutcome:
    """What ``stop_run`` did."""

    execution_status: str
    stopped_execution: bool
    stopped_jobs: list[str]
    notes: list[str]


def stop_run(clients: RunClients, execution_arn: str, *, cause: str) -> StopOutcome:
    """Stop the execution and ask SageMaker to stop its jobs still in progress.

    The stack's events Lambda stops an aborted execution's job too; asking here as well makes
    the stop immediate and covers a job whose stop event was missed. Both are idempotent.
    """
    execution = describe_execution(clients.stepfunctions, execution_arn)
    notes: list[str] = []
    stopped = False
    if not execution.ended:
        clients.stepfunctions.stop_execution(
            executionArn=execution_arn, error=STOP_ERROR, cause=cause[:32768]
        )
        stopped = True
    finder = JobFinder(clients.sagemaker)
    if execution.start is not None:
        finder.search(execution.start)
    stopped_jobs: list[str] = []
    for job in merge_jobs(finder.jobs_of(execution.arn), execution.job_reports()):
        describe_job(clients.sagemaker, job)
        if job.status != "InProgress":
            continue
        try:
            clients.sagemaker.stop_training_job(TrainingJobName=job.name)
        except ClientError as error:
            code = error_code(error)
            notes.append(
                f"SageMaker did not stop {job.name} ({code}); the stack's events Lambda stops "
                "it when the execution is aborted."
            )
            continue
        stopped_jobs.append(job.name)
    status = describe_execution(clients.stepfunctions, execution_arn).status
    return StopOutcome(status, stopped, stopped_jobs, notes)


__all__ = ["STOP_ERROR", "StopOutcome", "stop_run"]
