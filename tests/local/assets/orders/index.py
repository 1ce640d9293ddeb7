"""Records the order in the table named by TABLE and says which helper it imported."""

import os

import boto3
import helper


def handler(event, context):
    boto3.client("dynamodb").put_item(
        TableName=os.environ["TABLE"], Item={"pk": {"S": str(event.get("order", "none"))}}
    )
    return {"origin": helper.ORIGIN, "order": event.get("order"), "queue": os.environ["QUEUE"]}
