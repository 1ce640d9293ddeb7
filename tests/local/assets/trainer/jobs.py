"""Shared by the trainer's functions: the token table and reporting a finished job."""

import json
import os

import boto3

TERMINAL = ("Completed", "Failed", "Stopped")


def table():
    return os.environ["TABLE"]


def report(job):
    """Send the waiting task the job's end; False when no task waits for it any more."""
    dynamodb = boto3.client("dynamodb")
    name = job["TrainingJobName"]
    item = dynamodb.get_item(TableName=table(), Key={"pk": {"S": name}}).get("Item")
    if item is None:
        return False
    stepfunctions = boto3.client("stepfunctions")
    token = item["token"]["S"]
    try:
        if job["TrainingJobStatus"] == "Completed":
            stepfunctions.send_task_success(
                taskToken=token,
                output=json.dumps({"TrainingJobName": name, "Status": job["TrainingJobStatus"]}),
            )
        else:
            stepfunctions.send_task_failure(
                taskToken=token,
                error=f"Training{job['TrainingJobStatus']}",
                cause=job.get("FailureReason", job["TrainingJobStatus"]),
            )
    except (
        stepfunctions.exceptions.TaskDoesNotExist,
        stepfunctions.exceptions.TaskTimedOut,
        stepfunctions.exceptions.InvalidToken,
    ):
        pass
    dynamodb.delete_item(TableName=table(), Key={"pk": {"S": name}})
    return True
