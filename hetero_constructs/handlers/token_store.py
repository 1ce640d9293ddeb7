"""The run table: what the Lambdas remember between a job's creation and its end.

- ``job#{name}``: a job of ours that is not settled yet: its waiting task's token, execution,
  slot, attempt and control role, and the request's execution role and output path (with the
  job's marker tags, what tells the run's own job from another job of the same name). Written
  BEFORE the job is created and deleted only once the
  job's end is reported (or the job is known never to have been created), so the reconciler
  finds every job that could still be running. The ``byExecution`` index finds an execution's
  jobs when it ends.
- ``slot#{digest}``: one entry of a task: its current job, attempt, whether that job's end was
  reported, and how many capacity failures it had (which fallback variant runs next); the task
  token of the attempt that holds it and a mark of every token that held it (how an entry finds
  its own lane among identical entries, see ``lanes``).

Every write is conditional (docs/lifecycle.md): a job item is created only where none is
(``attribute_not_exists``), handed to a newer attempt only by a newer attempt, deleted only by
who knows its token; a slot is written only over the version its writer read, or while it still
names the job its writer settles. A writer that loses a condition gets ``False`` and changes
nothing. Every item expires through DynamoDB TTL (``expires_at``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from hetero_constructs.handlers import environment

JOB = "job#"
SLOT = "slot#"
EXECUTION_INDEX = "byExecution"


def table_name() -> str:
    return environment.required("TOKEN_TABLE")


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
    # The attempt (RetryCount) whose task token the item holds: a newer attempt that takes the
    # job over raises it; an older one never writes over it.
    holder: int = -1
    # The run of the execution the job belongs to: its start (as the task's context gives it)
    # and how often it had been redriven (DescribeExecution) when the job was created.
    execution_start: str = ""
    redrive_count: int = 0
    request_digest: str = ""  # the digest of the request (the job's request tag)

    @property
    def token_holder(self) -> int:
        return self.attempt if self.holder < 0 else self.holder

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
            holder=int(item.get("holder", {}).get("N", "-1")),
            execution_start=item.get("execution_start", {}).get("S", ""),
            redrive_count=int(item.get("redrive_count", {}).get("N", "0")),
            request_digest=item.get("request_digest", {}).get("S", ""),
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
    # The newest attempt (RetryCount) that acted on the slot: an older invocation arriving late
    # touches nothing.
    holder: int = 0
    # Raised by every write: a writer that read version N writes only over version N.
    version: int = 0
    # The task token of the attempt that holds the slot ("" in items written before it was kept).
    token: str = ""
    # ``token_mark`` of every token that held the slot: an invocation finds its own entry's lane.
    chain: tuple[str, ...] = ()
    # A success was reported for ``job``: the lane's entry is done, no other entry takes it.
    completed: bool = False

    def held_by(self, token: str) -> SlotItem:
        """The slot as the attempt holding ``token`` takes it."""
        mark = token_mark(token)
        chain = self.chain if mark in self.chain else (*self.chain, mark)
        return dataclasses.replace(self, token=token, chain=chain)

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
            holder=int(item.get("holder", {}).get("N", "0")),
            version=int(item.get("version", {}).get("N", "0")),
            token=item.get("token", {}).get("S", ""),
            chain=tuple(mark["S"] for mark in item.get("chain", {}).get("L", [])),
            completed=bool(item.get("completed", {}).get("BOOL", False)),
        )


def token_mark(token: str) -> str:
    """64 bits of a task token: what a slot remembers of each token that held it."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def _conditional(dynamodb: Any, call: str, **arguments: Any) -> bool:
    """Run a conditional write; False when its condition failed (nothing was written)."""
    try:
        getattr(dynamodb, call)(TableName=table_name(), **arguments)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True


def put_job(dynamodb: Any, job: JobItem, ttl_seconds: int, *, take_over: bool = False) -> bool:
    """Remember a job (and its waiting task). False, writing nothing, when the name already has
    an item: another run's (a name collision) or, with ``take_over``, one that a newer attempt
    of the slot holds (a late invocation never takes a newer attempt's job)."""
    item: dict[str, Any] = {
        "pk": {"S": JOB + job.name},
        "task_token": {"S": job.task_token},
        "execution_arn": {"S": job.execution_arn},
        "slot": {"S": job.slot},
        "attempt": {"N": str(job.attempt)},
        "variant": {"N": str(job.variant)},
        "role_arn": {"S": job.role_arn},
        "created_at": {"N": str(job.created_at or int(time.time()))},
        "holder": {"N": str(job.token_holder)},
        "redrive_count": {"N": str(job.redrive_count)},
        "expires_at": {"N": str(int(time.time()) + ttl_seconds)},
    }
    for key, value in (
        ("execution_role", job.execution_role),
        ("output_path", job.output_path),
        ("execution_start", job.execution_start),
        ("request_digest", job.request_digest),
    ):
        if value:
            item[key] = {"S": value}
    if not take_over:
        return _conditional(
            dynamodb, "put_item", Item=item, ConditionExpression="attribute_not_exists(pk)"
        )
    return _conditional(
        dynamodb,
        "put_item",
        Item=item,
        ConditionExpression="attribute_not_exists(pk) OR (#slot = :slot AND "
        "(holder < :holder OR task_token = :token))",
        ExpressionAttributeNames={"#slot": "slot"},
        ExpressionAttributeValues={
            ":slot": {"S": job.slot},
            ":holder": {"N": str(job.token_holder)},
            ":token": {"S": job.task_token},
        },
    )


def get_job(dynamodb: Any, name: str) -> JobItem | None:
    item = dynamodb.get_item(
        TableName=table_name(), Key={"pk": {"S": JOB + name}}, ConsistentRead=True
    ).get("Item")
    return JobItem.parse(item) if item else None


def forget_job(dynamodb: Any, job: JobItem) -> bool:
    """Delete the job's item while it still holds ``job``'s token (a newer attempt that took the
    job over keeps its item). False when it did not."""
    return _conditional(
        dynamodb,
        "delete_item",
        Key={"pk": {"S": JOB + job.name}},
        ConditionExpression="task_token = :token",
        ExpressionAttributeValues={":token": {"S": job.task_token}},
    )


def quarantine(dynamodb: Any, key: str, ttl_seconds: int) -> bool:
    """Mark an item that does not parse, once, so that later passes skip it; it gets a TTL if it
    had none. True for the pass that marked it (the one that reports it)."""
    return _conditional(
        dynamodb,
        "update_item",
        Key={"pk": {"S": key}},
        UpdateExpression="SET quarantined = :now, expires_at = if_not_exists(expires_at, :ttl)",
        ConditionExpression="attribute_exists(pk) AND attribute_not_exists(quarantined)",
        ExpressionAttributeValues={
            ":now": {"N": str(int(time.time()))},
            ":ttl": {"N": str(int(time.time()) + ttl_seconds)},
        },
    )


def jobs_of_execution(dynamodb: Any, execution_arn: str) -> list[JobItem]:
    pages = dynamodb.get_paginator("query").paginate(
        TableName=table_name(),
        IndexName=EXECUTION_INDEX,
        KeyConditionExpression="execution_arn = :arn",
        ExpressionAttributeValues={":arn": {"S": execution_arn}},
    )
    items = [item for page in pages for item in page.get("Items", [])]
    return [JobItem.parse(item) for item in items if "quarantined" not in item]


def all_jobs(dynamodb: Any) -> list[dict[str, Any]]:
    """Every unsettled job's item, unparsed (the reconciler's view: it parses each on its own,
    so that one malformed item does not hide the others); the table holds only live runs.
    Items already reported as malformed (quarantined) are left out."""
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table_name(),
        FilterExpression="begins_with(pk, :job) AND attribute_not_exists(quarantined)",
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
    dynamodb: Any,
    slot: SlotItem,
    ttl_seconds: int,
    *,
    only_if_job: str | None = None,
    fresh: bool = False,
) -> bool:
    """Write the slot, conditionally; False when the condition failed (nothing was written).

    ``slot.version`` is the version its writer read; the write raises it by one. Written only:
    with ``only_if_job``, while that job is still the slot's current one (an old job's late
    report never rewinds a newer attempt); with ``fresh``, where no slot is; otherwise over the
    version read (a racing writer that read the same version loses).
    """
    item: dict[str, Any] = {
        "pk": {"S": SLOT + slot.digest},
        "attempt": {"N": str(slot.attempt)},
        "variant": {"N": str(slot.variant)},
        "reported": {"BOOL": slot.reported},
        "capacity_failures": {"N": str(slot.capacity_failures)},
        "holder": {"N": str(slot.holder)},
        "version": {"N": str(slot.version + 1)},
        "written_at": {"N": str(int(time.time()))},
        "expires_at": {"N": str(int(time.time()) + ttl_seconds)},
    }
    if slot.job is not None:
        item["job"] = {"S": slot.job}
    if slot.token:
        item["token"] = {"S": slot.token}
    if slot.chain:
        item["chain"] = {"L": [{"S": mark} for mark in slot.chain]}
    if slot.completed:
        item["completed"] = {"BOOL": True}
    condition: dict[str, Any]
    if only_if_job is not None:
        condition = {
            "ConditionExpression": "attribute_not_exists(pk) OR job = :job",
            "ExpressionAttributeValues": {":job": {"S": only_if_job}},
        }
    elif fresh:
        condition = {"ConditionExpression": "attribute_not_exists(pk)"}
    elif slot.version:
        condition = {
            "ConditionExpression": "version = :version",
            "ExpressionAttributeValues": {":version": {"N": str(slot.version)}},
        }
    else:  # a slot written before versions were kept
        condition = {
            "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(version)"
        }
    return _conditional(dynamodb, "put_item", Item=item, **condition)


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
    "quarantine",
    "table_name",
    "token_mark",
]
