#!/usr/bin/env python3
"""Example app: heterogeneous training, on its own and inside a train -> model -> register pipeline.

- ``HeteroTrainingExample``: one training job (a CPU group feeding a torch_distributed GPU
  group) with a state machine of its own and its dashboard.
- ``HeteroTrainingPipeline``: the same job as a task in a pipeline: preprocess (a Lambda) ->
  train -> create the SageMaker model -> register it in a model package group; a training
  failure is caught and notified, and every alarm (failed pipeline runs, the runner's dead
  letters and Lambda errors) notifies the same KMS-encrypted SNS topic. To notify a topic of
  your own instead: ``cdk synth -c notification_topic_arn=arn:aws:sns:...`` (its key policy, if
  it is encrypted, must let ``cloudwatch.amazonaws.com`` and the pipeline's role use the key).

`make synth` synthesizes both with the CDK CLI; cdk-nag (AwsSolutions and Serverless packs)
checks them on every synth.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from cdk_nag import AwsSolutionsChecks, ServerlessChecks
from constructs import Construct

from hetero_constructs import (
    LAMBDA_RUNTIME,
    DistributedTraining,
    Framework,
    HeterogeneousTrainingJob,
    HeterogeneousTrainingTask,
    InstanceGroup,
    TrainingChannel,
    TrainingDashboard,
    TrainingMetric,
    TrainingRunner,
    TrainingSpec,
    bucket_uri,
    depend_on_policy_only,
)

EXAMPLE_CODE = Path(__file__).parent / "examples" / "hetero_training"
PIPELINE_CODE = Path(__file__).parent / "examples" / "pipeline"


def script_metrics() -> list[TrainingMetric]:
    """The training script's own metrics (its ``METRIC_DEFINITIONS``: the lines it writes)."""
    script = runpy.run_path(str(EXAMPLE_CODE / "train.py"), run_name="example_train")
    return [TrainingMetric(name, regex) for name, regex in script["METRIC_DEFINITIONS"].items()]


def example_spec(data: s3.IBucket) -> TrainingSpec:
    """2 x ml.c5.18xlarge preprocess and serve the data, 2 x ml.p4d.24xlarge train (torchrun).

    Sized to run locally too (`make synth`): 1,000 rows, 3 epochs of batches of 64; the data
    hosts give up 60 s after the trainers are gone."""
    data_group = InstanceGroup("data", "ml.c5.18xlarge", 2)
    gpu_group = InstanceGroup("gpu", "ml.p4d.24xlarge", 2)
    return TrainingSpec(
        framework=Framework.PYTORCH,
        framework_version="2.3.0",
        py_version="py311",
        entry_point="train.py",
        source_dir=str(EXAMPLE_CODE),
        instance_groups=[data_group, gpu_group],
        channels=[
            TrainingChannel(
                "train",
                bucket_uri(data, "datasets/train/"),
                instance_groups=[data_group],
            )
        ],
        distribution=DistributedTraining.torch_distributed(instance_group=gpu_group),
        hyperparameters={"epochs": 3, "batch_size": 64, "lr": 0.5, "idle_timeout": 60},
        # Its own (loss, accuracy); the construct adds each group's throughput and data wait.
        metric_definitions=script_metrics(),
        output_path=bucket_uri(data, "training-output/"),
        max_run=4 * 3600,
        tags={"project": "hetero-example"},
    )


def log_key(scope: Construct) -> kms.Key:
    """The stack's key for its log groups (the runner lets CloudWatch Logs use it)."""
    return kms.Key(
        scope,
        "LogKey",
        enable_key_rotation=True,
        description="Encrypts the training logs",
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )


def data_bucket(scope: Construct) -> s3.IBucket:
    name = scope.node.try_get_context("data_bucket") or "example-training-data"
    return s3.Bucket.from_bucket_name(scope, "Data", name)


class HeteroTrainingStack(cdk.Stack):
    """One training job: 2 x ml.c5.18xlarge preprocess, 2 x ml.p4d.24xlarge train with torchrun."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        # The runner's options come first: its log groups are encrypted with our key.
        TrainingRunner(self, log_encryption_key=log_key(self))
        self.job = HeterogeneousTrainingJob(
            self, "Training", job_name_prefix="hetero-example", spec=example_spec(data_bucket(self))
        )
        # One row per instance group (GPU or CPU use, samples/s, data wait), then the runs.
        self.job.add_dashboard()


class TrainingArtifacts(tasks.S3Location):
    """The model artifacts a training task outputs, read from the state's input at ``path``.

    Unlike ``S3Location.from_json_expression`` it grants nothing (that one grants
    ``s3:GetObject`` and ``s3:ListBucket`` on ``*``): the model role reads the training
    output prefix only, with a statement of its own.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path

    def bind(
        self,
        task: tasks.ISageMakerTask,
        *,
        for_reading: bool | None = None,
        for_writing: bool | None = None,
    ) -> tasks.S3LocationConfig:
        return tasks.S3LocationConfig(uri=sfn.JsonPath.string_at(self._path))


def training_image_repository(scope: Construct, image_uri: str) -> tuple[ecr.IRepository, str]:
    """The ECR repository and tag of an image URI (``account.dkr.ecr.region.suffix/repo:tag``)."""
    registry, _, name_and_tag = image_uri.partition("/")
    account, _, _, region, *_ = registry.split(".")
    name, _, tag = name_and_tag.partition(":")
    arn = f"arn:{cdk.Aws.PARTITION}:ecr:{region}:{account}:repository/{name}"
    return ecr.Repository.from_repository_attributes(
        scope, "TrainingImageRepository", repository_arn=arn, repository_name=name
    ), tag


def notification_topic(scope: Construct) -> sns.ITopic:
    """The topic every alarm and failure notifies: the user's (context), or a KMS-encrypted one."""
    arn = scope.node.try_get_context("notification_topic_arn")
    if arn:
        return sns.Topic.from_topic_arn(scope, "Notifications", arn)
    key = kms.Key(
        scope,
        "NotificationsKey",
        enable_key_rotation=True,
        description="Encrypts the example pipeline's notifications",
        removal_policy=cdk.RemovalPolicy.DESTROY,
    )
    # CloudWatch alarms publish to the encrypted topic with the key (SNS's key policy rule).
    key.grant(
        iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey"
    )
    return sns.Topic(
        scope,
        "TrainingFailures",
        enforce_ssl=True,
        master_key=key,
        display_name="Example pipeline training failures and alarms",
    )


class HeteroTrainingPipelineStack(cdk.Stack):
    """Preprocess -> heterogeneous training -> SageMaker model -> model package (or notify)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        data = data_bucket(self)
        self.log_key = log_key(self)
        self.topic = topic = notification_topic(self)
        TrainingRunner(self, log_encryption_key=self.log_key, alarm_topic=topic)
        preprocess = self._preprocess_function(bucket_uri(data, "datasets/train/"))
        prepare = tasks.LambdaInvoke(
            self,
            "Preprocess",
            lambda_function=preprocess,
            payload_response_only=True,
            result_path="$.prepared",
            retry_on_service_exceptions=True,
        )
        self.train = HeterogeneousTrainingTask(
            self,
            "Train",
            job_name_prefix="hetero-pipeline",
            spec=example_spec(data),
            # The preprocessing step's result is the run's overrides.
            overrides=sfn.TaskInput.from_json_path_at("$.prepared"),
            result_path="$.training",
        )
        model_role = iam.Role(
            self,
            "ModelRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="SageMaker model of the example pipeline",
        )
        # The model reads its training job's artifacts (under the job name prefix) and pulls
        # the image the training spec names: nothing on "*".
        model_role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[data.arn_for_objects("training-output/hetero-pipeline-*")],
            )
        )
        repository, tag = training_image_repository(
            self, self.train.request["AlgorithmSpecification"]["TrainingImage"]
        )
        create_model = tasks.SageMakerCreateModel(
            self,
            "Create model",
            model_name=sfn.JsonPath.string_at("$.training.TrainingJobName"),
            primary_container=tasks.ContainerDefinition(
                # from_ecr_repository grants the pull on this repository only.
                image=tasks.DockerImage.from_ecr_repository(repository, tag),
                model_s3_location=TrainingArtifacts("$.training.ModelArtifacts.S3ModelArtifacts"),
            ),
            role=model_role,
            result_path="$.model",
        )
        group = sagemaker.CfnModelPackageGroup(
            self,
            "Models",
            model_package_group_name="hetero-example-models",
            model_package_group_description="Models trained by the example pipeline",
        )
        register = tasks.CallAwsService(
            self,
            "Register model",
            service="sagemaker",
            action="createModelPackage",
            parameters={
                "ModelPackageGroupName": group.model_package_group_name,
                "ModelApprovalStatus": "PendingManualApproval",
                "InferenceSpecification": {
                    "Containers": [
                        {
                            "Image": sfn.JsonPath.string_at(
                                "$.training.AlgorithmSpecification.TrainingImage"
                            ),
                            "ModelDataUrl": sfn.JsonPath.string_at(
                                "$.training.ModelArtifacts.S3ModelArtifacts"
                            ),
                        }
                    ],
                    "SupportedContentTypes": ["application/json"],
                    "SupportedResponseMIMETypes": ["application/json"],
                },
            },
            iam_resources=[
                group.attr_model_package_group_arn,
                self.format_arn(
                    service="sagemaker",
                    resource="model-package",
                    resource_name=f"{group.model_package_group_name}/*",
                ),
            ],
            result_path="$.registered",
        )
        register.node.add_dependency(group)
        notify = tasks.SnsPublish(
            self,
            "Notify failure",
            topic=topic,
            subject="Training failed",
            message=sfn.TaskInput.from_json_path_at("$.failure"),
            result_path=sfn.JsonPath.DISCARD,
        ).next(sfn.Fail(self, "Pipeline failed", error_path="$.failure.Error"))
        # Any training failure (HeteroTraining.* error names, see TrainingErrors) is notified.
        self.train.add_catch(notify, errors=["States.ALL"], result_path="$.failure")
        registered = sfn.Succeed(self, "Registered")
        definition = prepare.next(self.train).next(create_model).next(register).next(registered)
        self._acknowledge()
        self.state_machine = state_machine = sfn.StateMachine(
            self,
            "Pipeline",
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=logs.LogGroup(
                    self,
                    "PipelineLogs",
                    retention=logs.RetentionDays.ONE_YEAR,
                    encryption_key=self.log_key,
                    removal_policy=cdk.RemovalPolicy.DESTROY,
                ),
                level=sfn.LogLevel.ALL,
            ),
        )
        depend_on_policy_only(state_machine, state_machine.role)
        # The training task's dashboard, with the pipeline's executions as its runs.
        TrainingDashboard(self, "TrainingDashboard", task=self.train, state_machine=state_machine)
        if topic.master_key is not None:
            # Publishing to an encrypted topic takes the key (SnsPublish grants sns:Publish only).
            topic.master_key.grant(state_machine, "kms:Decrypt", "kms:GenerateDataKey")
        # A run that fails outside the training task (the model, the registry) notifies too.
        alarm = state_machine.metric_failed(period=cdk.Duration.minutes(5)).create_alarm(
            self,
            "PipelineFailedAlarm",
            alarm_description="A run of the example pipeline failed",
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))

    def _acknowledge(self) -> None:
        """cdk-nag findings of aws-cdk-lib's own tasks in this pipeline, each with its reason."""
        iam5 = "AwsSolutions::AwsSolutions-IAM5"
        partition_region_account = "arn:<AWS::Partition>:sagemaker:us-west-2:<AWS::AccountId>"
        acknowledgments = {
            f"{iam5}[Resource::*]": "X-Ray tracing, Step Functions log delivery, "
            "SageMakerCreateModel's sagemaker:ListTags and the model's ecr:GetAuthorizationToken "
            "have no resource-level permissions.",
            f"{iam5}[Resource::<PreprocessFunctionAF9E4590.Arn>:*]": "aws-cdk-lib's LambdaInvoke "
            "grants the function's versions and aliases.",
            f"{iam5}[Resource::{partition_region_account}:model/*]": "Model names are the "
            "training job names, chosen per run.",
            f"{iam5}[Resource::{partition_region_account}:model-package/hetero-example-models/*]": (
                "Model package versions are numbered by SageMaker within the group."
            ),
            f"{iam5}[Resource::arn:<AWS::Partition>:s3:::example-training-data/training-output/"
            "hetero-pipeline-*]": "The model reads the artifacts of this pipeline's jobs only.",
            "Serverless::Serverless-SQSRedrivePolicy": "PreprocessDeadLetters is itself a "
            "dead-letter queue (of the preprocessing function).",
        }
        cdk.Validations.of(self).acknowledge(
            *(cdk.Acknowledgment(id=i, reason=r) for i, r in acknowledgments.items())
        )

    def _preprocess_function(self, training_prefix: str) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            "PreprocessLogs",
            retention=logs.RetentionDays.THREE_MONTHS,
            encryption_key=self.log_key,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            "PreprocessRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Preprocessing step of the example pipeline",
        )
        log_group.grant_write(role)
        function = lambda_.Function(
            self,
            "PreprocessFunction",
            runtime=LAMBDA_RUNTIME,
            handler="preprocess.handler",
            code=lambda_.Code.from_asset(str(PIPELINE_CODE), exclude=["**/__pycache__"]),
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE,
            timeout=cdk.Duration.seconds(30),
            memory_size=256,
            environment={"TRAINING_DATA_PREFIX": training_prefix},
            dead_letter_queue=sqs.Queue(
                self,
                "PreprocessDeadLetters",
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
                retention_period=cdk.Duration.days(14),
            ),
        )
        depend_on_policy_only(function, role)  # cfn-lint W3005: the role is referenced anyway
        return function


def build_app(app: cdk.App | None = None) -> tuple[cdk.App, HeteroTrainingStack]:
    """The example app with cdk-nag's AwsSolutions checks attached."""
    app = app or cdk.App()
    env = cdk.Environment(region=app.node.try_get_context("region") or "us-west-2")
    stack = HeteroTrainingStack(app, "HeteroTrainingExample", env=env)
    HeteroTrainingPipelineStack(app, "HeteroTrainingPipeline", env=env)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), ServerlessChecks(app))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
