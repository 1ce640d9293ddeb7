"""On a schedule: report every finished job whose event never arrived."""

import boto3
import jobs


def handler(event, context):
    items = boto3.client("dynamodb").scan(TableName=jobs.table())["Items"]
    sagemaker = boto3.client("sagemaker")
    reported = []
    for item in items:
        job = sagemaker.describe_training_job(TrainingJobName=item["pk"]["S"])
        if job["TrainingJobStatus"] in jobs.TERMINAL and jobs.report(job):
            reported.append(job["TrainingJobName"])
    return reported
