"""The task-token table: job name -> task token, execution ARN -> job name.

Items expire through DynamoDB TTL (``expires_at``), a little after the longest the job can take.
"""

from __future__ import annotations

import os
import time
from typing import Any

JOB_PREFIX = "job#"
EXECUTION_PREFIX = "execution#"


def table_name() -> str:
    return os.environ["TOKEN_TABLE"]


def remember(
    dynamodb: Any, job_name: str, task_token: str, execution_arn: str, ttl_seconds: int
) -> None:
    """Store the token under the job name, and the job name under the execution ARN.

    A retried submit overwrites both: a retried task state carries a new task token.
    """
    expires_at = int(time.time()) + ttl_seconds
    items = (
        {
            "pk": {"S": JOB_PREFIX + job_name},
            "task_token": {"S": task_token},
            "execution_arn": {"S": execution_arn},
        },
        {"pk": {"S": EXECUTION_PREFIX + execution_arn}, "job_name": {"S": job_name}},
    )
    for item in items:
        item["expires_at"] = {"N": str(expires_at)}
        dynamodb.put_item(TableName=table_name(), Item=item)


def task_token(dynamodb: Any, job_name: str) -> str | None:
    item = dynamodb.get_item(
        TableName=table_name(), Key={"pk": {"S": JOB_PREFIX + job_name}}, ConsistentRead=True
    ).get("Item")
    return item["task_token"]["S"] if item else None


def job_of_execution(dynamodb: Any, execution_arn: str) -> str | None:
    item = dynamodb.get_item(
        TableName=table_name(),
        Key={"pk": {"S": EXECUTION_PREFIX + execution_arn}},
        ConsistentRead=True,
    ).get("Item")
    return item["job_name"]["S"] if item else None


def forget_job(dynamodb: Any, job_name: str) -> None:
    dynamodb.delete_item(TableName=table_name(), Key={"pk": {"S": JOB_PREFIX + job_name}})
