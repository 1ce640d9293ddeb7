"""Creates one training job per attempt (the name carries $$.State.RetryCount)."""

import os

import boto3
from botocore.exceptions import ClientError

IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.3.0-gpu-py311"


class ResourceLimitExceeded(Exception):
    pass


def handler(event, context):
    name = f"local-{event['execution']}-{event['attempt']}"
    boto3.client("dynamodb").put_item(
        TableName=os.environ["TABLE"], Item={"pk": {"S": name}, "token": {"S": event["token"]}}
    )
    try:
        boto3.client("sagemaker").create_training_job(
            TrainingJobName=name,
            AlgorithmSpecification={
                "TrainingImage": IMAGE,
                "TrainingInputMode": "File",
            },
            RoleArn=os.environ["ROLE"],
            OutputDataConfig={"S3OutputPath": f"s3://{os.environ['BUCKET']}/output/"},
            ResourceConfig={
                "InstanceGroups": [
                    {
                        "InstanceGroupName": "data",
                        "InstanceType": "ml.c5.xlarge",
                        "InstanceCount": 1,
                    },
                    {
                        "InstanceGroupName": "gpu",
                        "InstanceType": "ml.p4d.24xlarge",
                        "InstanceCount": 2,
                    },
                ],
                "VolumeSizeInGB": 30,
            },
            StoppingCondition={"MaxRuntimeInSeconds": 3600},
            Tags=[{"Key": "execution", "Value": event["execution"]}],
        )
    except ClientError as error:
        if error.response["Error"]["Code"] == "ResourceLimitExceeded":
            raise ResourceLimitExceeded(str(error)) from error
        raise
    return {"TrainingJobName": name}
