"""The run table: what the Lambdas remember between a job's creation and its end.

- ``job#{name}``: a job of ours that is not settled yet: its waiting task's token, execution,
  slot, attempt and control role, and the request's execution role and output path (with the
  job's marker tags, what tells the run's own job from another job of the same name). Written
  BEFORE the job is created and deleted only once the
  job's end is reported (or the job is known never to have been created), so the reconciler
  finds every job that could still be running. The ``byExecution`` index finds an execution's
  jobs when it ends.
- ``slot#{digest}``: one entry of a task: its current job, attempt, whether that job's end was
  reported, and how many capacity failures it had (which fallback variant runs next).

Items expire through DynamoDB TTL (``expires_at``), a day after the longest a job can take.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

JOB = "job#"
SLOT = "slot#"
EXECUTION_INDEX = "byExecution"


def table_name() -> str:
    return os.environ["TOKEN_TABLE"]


@dataclass(frozen=True)
class JobItem:
    name: str
    task_token: str
    execution_arn: str
    slot: str
    attempt: int
    variant: int
    role_arn: str
    created_at: int
    execution_role: str = ""  # the request's RoleArn ("" in items written before it was kept)
    output_path: str = ""  # the request's OutputDataConfig.S3OutputPath

    @staticmethod
    def parse(item: dict[str, Any]) -> JobItem:
        return JobItem(
            name=item["pk"]["S"].removeprefix(JOB),
            task_token=item["task_token"]["S"],
            execution_arn=item["execution_arn"]["S"],
            slot=item["slot"]["S"],
            attempt=int(item["attempt"]["N"]),
            variant=int(item.get("variant", {}).get("N", "0")),
            role_arn=item["role_arn"]["S"],
            created_at=int(item.get("created_at", {}).get("N", "0")),
            execution_role=item.get("execution_role", {}).get("S", ""),
            output_path=item.get("output_path", {}).get("S", ""),
        )


@dataclass(frozen=True)
class SlotItem:
    digest: str
    job: str | None
    attempt: int
    variant: int
    reported: bool
    capacity_failures: int
    # When it was written (seconds since the epoch; 0 in items written before it was kept).
    written_at: int = 0

    @staticmethod
    def parse(item: dict[str, Any]) -> SlotItem:
        return SlotItem(
            digest=item["pk"]["S"].removeprefix(SLOT),
            job=item.get("job", {}).get("S"),
            attempt=int(item.get("attempt", {}).get("N", "0")),
            variant=int(item.get("variant", {}).get("N", "0")),
            reported=bool(item.get("reported", {}).get("BOOL", False)),
            capacity_failures=int(item.get("capacity_failures", {}).get("N", "0")),
            written_at=int(item.get("written_at", {}).get("N", "0")),
        )


def put_job(dynamodb: Any, job: JobItem, ttl_seconds: int) -> None:
    """Remember a job (and its waiting task); a retried submit overwrites the token."""
    item: dict[str, Any] = {
        "pk": {"S": JOB + job.name},
        "task_token": {"S": job.task_token},
        "execution_arn": {"S": job.execution_arn},
        "slot": {"S": job.slot},
        "attempt": {"N": str(job.attempt)},
        "variant": {"N": str(job.variant)},
        "role_arn": {"S": job.role_arn},
        "created_at": {"N": str(job.created_at or int(time.time()))},
        "expires_at": {"N": str(int(time.time()) + ttl_seconds)},
    }
    if job.execution_role:
        item["execution_role"] = {"S": job.execution_role}
    if job.output_path:
        item["output_path"] = {"S": job.output_path}
    dynamodb.put_item(TableName=table_name(), Item=item)


def get_job(dynamodb: Any, name: str) -> JobItem | None:
    item = dynamodb.get_item(
        TableName=table_name(), Key={"pk": {"S": JOB + name}}, ConsistentRead=True
    ).get("Item")
    return JobItem.parse(item) if item else None


def forget_job(dynamodb: Any, name: str) -> None:
    dynamodb.delete_item(TableName=table_name(), Key={"pk": {"S": JOB + name}})


def jobs_of_execution(dynamodb: Any, execution_arn: str) -> list[JobItem]:
    pages = dynamodb.get_paginator("query").paginate(
        TableName=table_name(),
        IndexName=EXECUTION_INDEX,
        KeyConditionExpression="execution_arn = :arn",
        ExpressionAttributeValues={":arn": {"S": execution_arn}},
    )
    return [JobItem.parse(item) for page in pages for item in page.get("Items", [])]


def all_jobs(dynamodb: Any) -> list[dict[str, Any]]:
    """Every unsettled job's item, unparsed (the reconciler's view: it parses each on its own,
    so that one malformed item does not hide the others); the table holds only live runs."""
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table_name(),
        FilterExpression="begins_with(pk, :job)",
        ExpressionAttributeValues={":job": {"S": JOB}},
        ConsistentRead=True,
    )
    return [item for page in pages for item in page.get("Items", [])]


def get_slot(dynamodb: Any, digest: str) -> SlotItem | None:
    item = dynamodb.get_item(
        TableName=table_name(), Key={"pk": {"S": SLOT + digest}}, ConsistentRead=True
    ).get("Item")
    return SlotItem.parse(item) if item else None


def put_slot(
    dynamodb: Any, slot: SlotItem, ttl_seconds: int, *, only_if_job: str | None = None
) -> bool:
    """Write the slot; with ``only_if_job``, only while that job is still the slot's current one
    (an old job's late report never rewinds a newer attempt). False when the condition failed."""
    item: dict[str, Any] = {
        "pk": {"S": SLOT + slot.digest},
        "attempt": {"N": str(slot.attempt)},
        "variant": {"N": str(slot.variant)},
        "reported": {"BOOL": slot.reported},
        "capacity_failures": {"N": str(slot.capacity_failures)},
        "written_at": {"N": str(int(time.time()))},
        "expires_at": {"N": str(int(time.time()) + ttl_seconds)},
    }
    if slot.job is not None:
        item["job"] = {"S": slot.job}
    arguments: dict[str, Any] = {"TableName": table_name(), "Item": item}
    if only_if_job is not None:
        arguments["ConditionExpression"] = "attribute_not_exists(pk) OR job = :job"
        arguments["ExpressionAttributeValues"] = {":job": {"S": only_if_job}}
    try:
        dynamodb.put_item(**arguments)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True


__all__ = [
    "JobItem",
    "SlotItem",
    "all_jobs",
    "forget_job",
    "get_job",
    "get_slot",
    "jobs_of_execution",
    "put_job",
    "put_slot",
    "table_name",
]
