"""Delivery by ARN, as the services deliver: a rule's target invoked (a Lambda function
asynchronously, a state machine started) and a message sent to an SQS queue, SNS topic or
Lambda function (a destination, a dead-letter queue)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hetero_constructs.local.events import DeliveryError, Target
from hetero_constructs.local.lambdas import Lambdas

#: A boto3 client of the local cloud, by service name.
ClientOf = Callable[[str], Any]
#: Sends a message by ARN (``send`` bound to its cloud).
Sender = Callable[[str, str, dict[str, str]], None]


def invoke_target(
    client: ClientOf, lambdas: Lambdas, sender: Sender, target: Target, payload: str
) -> None:
    """Invoke a rule's target with ``payload``; ``DeliveryError`` when its function is unknown."""
    service = target.arn.split(":")[2] if target.arn.count(":") >= 5 else ""
    if service == "lambda":
        try:
            function = lambdas.find(target.arn)
        except KeyError as error:
            raise DeliveryError(str(error)) from error
        lambdas.invoke_async(function, payload)
    elif service == "states":
        client("stepfunctions").start_execution(stateMachineArn=target.arn, input=payload)
    else:
        sender(target.arn, payload, {})


def send(
    client: ClientOf,
    lambdas: Lambdas,
    notes: list[str],
    arn: str,
    body: str,
    attributes: dict[str, str],
) -> None:
    """Deliver a message to an SQS queue, SNS topic or Lambda function by ARN (else a note)."""
    parts = arn.split(":")
    service = parts[2] if len(parts) > 5 else ""
    if service == "sqs":
        url = f"https://sqs.{parts[3]}.amazonaws.com/{parts[4]}/{parts[5]}"
        client("sqs").send_message(
            QueueUrl=url,
            MessageBody=body,
            MessageAttributes={
                key: {"DataType": "String", "StringValue": value or "-"}
                for key, value in attributes.items()
            },
        )
    elif service == "sns":
        client("sns").publish(TopicArn=arn, Message=body)
    elif service == "lambda":
        lambdas.queue_async(arn, body)
    else:
        notes.append(f"delivery to {arn} not simulated")


__all__ = ["ClientOf", "Sender", "invoke_target", "send"]
