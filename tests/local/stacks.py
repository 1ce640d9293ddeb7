"""Small hand-built CDK stacks the local runner must run as it runs any user's stack.

Synthesized once per test session into one cdk.out (with asset metadata, as the CDK CLI writes
it); the example app's own template (tests/synthesized.py) covers the other way of finding
assets (the assets manifest).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

ASSETS = Path(__file__).parent / "assets"
RUNTIME = lambda_.Runtime.PYTHON_3_12
IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-inference:2.3.0-cpu-py311"


def python_function(
    scope: Construct, name: str, folder: str, handler: str = "index.handler"
) -> lambda_.Function:
    return lambda_.Function(
        scope,
        name,
        runtime=RUNTIME,
        handler=handler,
        code=lambda_.Code.from_asset(str(ASSETS / folder)),
        timeout=cdk.Duration.seconds(30),
    )


class OrdersStack(cdk.Stack):
    """Two Python Lambdas whose assets both hold index.py and helper.py, an inline Lambda, a
    table, queue, topic and bucket, a state machine, and a rule on its executions whose target
    always fails (its async failures go to the queue)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        table = dynamodb.Table(
            self,
            "Orders",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        )
        failures = sqs.Queue(self, "Failures")
        topic = sns.Topic(self, "Notices")
        bucket = s3.Bucket(self, "Artifacts")
        orders = python_function(self, "RecordOrder", "orders")
        orders.add_environment("TABLE", table.table_name)
        orders.add_environment("QUEUE", failures.queue_url)
        orders.add_environment("TOPIC", topic.topic_arn)
        orders.add_environment("BUCKET", bucket.bucket_name)
        audit = python_function(self, "Audit", "audit")
        inline = lambda_.Function(
            self,
            "Inline",
            runtime=RUNTIME,
            handler="index.handler",
            code=lambda_.Code.from_inline(
                "def handler(event, context):\n    return {'inline': True}\n"
            ),
        )
        record = tasks.LambdaInvoke(
            self,
            "Record order",
            lambda_function=orders,
            payload_response_only=True,
            result_path="$.recorded",
        )
        record.add_catch(
            sfn.Pass(self, "Order failed"), errors=["Custom.Boom"], result_path="$.failure"
        )
        chain = record.next(
            tasks.LambdaInvoke(
                self,
                "Audit order",
                lambda_function=audit,
                payload_response_only=True,
                result_path="$.audit",
            )
        ).next(
            tasks.LambdaInvoke(
                self,
                "Run inline",
                lambda_function=inline,
                payload_response_only=True,
                result_path="$.inline",
            )
        )
        machine = sfn.StateMachine(
            self, "OrdersMachine", definition_body=sfn.DefinitionBody.from_chainable(chain)
        )
        flaky = lambda_.Function(
            self,
            "Flaky",
            runtime=RUNTIME,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(ASSETS / "flaky")),
            retry_attempts=1,
            on_failure=destinations.SqsDestination(failures),
        )
        events.Rule(
            self,
            "OrdersSucceeded",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={"status": ["SUCCEEDED"], "stateMachineArn": [machine.state_machine_arn]},
            ),
            targets=[targets.LambdaFunction(flaky)],
        )


class TrainingStack(cdk.Stack):
    """A generic training flow: a Lambda creates one job per attempt and waits for its task
    token; a rule on SageMaker's job events reports the end; a scheduled reconciler reports the
    ends whose events were lost. Capacity failures and refused submits are retried."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        table = dynamodb.Table(
            self,
            "Tokens",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        )
        role = iam.Role(
            self, "TrainingRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com")
        )
        bucket = s3.Bucket(self, "Output")
        functions = {}
        for name in ("submit", "finish", "reconcile"):
            function = python_function(self, name.capitalize(), "trainer", f"{name}.handler")
            function.add_environment("TABLE", table.table_name)
            function.add_environment("ROLE", role.role_arn)
            function.add_environment("BUCKET", bucket.bucket_name)
            functions[name] = function
        submit = tasks.LambdaInvoke(
            self,
            "Train",
            lambda_function=functions["submit"],
            integration_pattern=sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
            retry_on_service_exceptions=False,
            payload=sfn.TaskInput.from_object(
                {
                    "token": sfn.JsonPath.task_token,
                    "execution": sfn.JsonPath.string_at("$$.Execution.Name"),
                    "attempt": sfn.JsonPath.number_at("$$.State.RetryCount"),
                }
            ),
            result_path="$.training",
        )
        submit.add_retry(
            errors=[
                "TrainingFailed",
                "ResourceLimitExceeded",
                "ProvisionedThroughputExceededException",
            ],
            interval=cdk.Duration.seconds(1),
            max_attempts=3,
            backoff_rate=1,
        )
        submit.add_catch(
            sfn.Fail(self, "Training failed", error="TrainingFailed", cause_path="$.error.Cause"),
            result_path="$.error",
        )
        sfn.StateMachine(
            self,
            "TrainingMachine",
            state_machine_name="local-training",
            definition_body=sfn.DefinitionBody.from_chainable(
                submit.next(sfn.Succeed(self, "Trained"))
            ),
        )
        events.Rule(
            self,
            "JobEnded",
            event_pattern=events.EventPattern(
                source=["aws.sagemaker"],
                detail_type=["SageMaker Training Job State Change"],
                detail={
                    "TrainingJobStatus": ["Completed", "Failed", "Stopped"],
                    "TrainingJobName": [{"prefix": "local-"}],
                },
            ),
            targets=[targets.LambdaFunction(functions["finish"])],
        )
        events.Rule(
            self,
            "EveryFiveMinutes",
            schedule=events.Schedule.rate(cdk.Duration.minutes(5)),
            targets=[targets.LambdaFunction(functions["reconcile"])],
        )


class JsonataStack(cdk.Stack):
    """A JSONata state machine: expressions over the input, the context and a Lambda's result."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        audit = python_function(self, "Audit", "audit")
        prepare = sfn.Pass.jsonata(
            self,
            "Prepare",
            outputs={
                "total": "{% $sum($states.input.items.price) %}",
                "names": "{% $states.input.items.name %}",
                "execution": "{% $states.context.Execution.Name %}",
                "state": "{% $states.context.State.Name %}",
                "retries": "{% $states.context.State.RetryCount %}",
                "started": "{% $states.context.Execution.StartTime %}",
                "machine": "{% $states.context.StateMachine.Id %}",
            },
        )
        invoke = tasks.LambdaInvoke.jsonata(
            self,
            "Audit order",
            lambda_function=audit,
            payload=sfn.TaskInput.from_object({"total": "{% $states.input.total %}"}),
            outputs={
                "order": "{% $states.input %}",
                "audited": "{% $states.result.Payload.seen.total %}",
            },
        )
        sfn.StateMachine(
            self,
            "JsonataMachine",
            query_language=sfn.QueryLanguage.JSONATA,
            definition_body=sfn.DefinitionBody.from_chainable(prepare.next(invoke)),
        )


class NestedStack(cdk.Stack):
    """A parent that runs a child with startExecution.sync:2 and associate_with_parent."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        child = sfn.StateMachine(
            self,
            "Child",
            state_machine_name="local-child",
            definition_body=sfn.DefinitionBody.from_chainable(
                sfn.Wait(self, "Work", time=sfn.WaitTime.seconds_path("$.wait")).next(
                    sfn.Pass(
                        self,
                        "Answer",
                        parameters={
                            "doubled.$": "States.MathAdd($.value, $.value)",
                            "parent.$": "$.AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID",
                        },
                    )
                )
            ),
        )
        run_child = tasks.StepFunctionsStartExecution(
            self,
            "Run child",
            state_machine=child,
            integration_pattern=sfn.IntegrationPattern.RUN_JOB,
            associate_with_parent=True,
            input=sfn.TaskInput.from_object(
                {
                    "wait": sfn.JsonPath.number_at("$.wait"),
                    "value": sfn.JsonPath.number_at("$.value"),
                }
            ),
            result_selector={"answer.$": "$.Output"},
        )
        sfn.StateMachine(
            self,
            "Parent",
            state_machine_name="local-parent",
            definition_body=sfn.DefinitionBody.from_chainable(run_child),
        )


class NetworkStack(cdk.Stack):
    """A VPC (with CDK's Node.js custom resource that restricts the default security group) and
    a security group whose ids a state machine passes on, as a training job's VpcConfig would."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=1,
            nat_gateways=0,
            restrict_default_security_group=True,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED
                )
            ],
        )
        group = ec2.SecurityGroup(self, "TrainingSg", vpc=vpc)
        sfn.StateMachine(
            self,
            "NetworkMachine",
            definition_body=sfn.DefinitionBody.from_chainable(
                sfn.Pass(
                    self,
                    "VpcConfig",
                    parameters={
                        "SecurityGroupIds": [group.security_group_id],
                        "Subnets": [vpc.isolated_subnets[0].subnet_id],
                        "VpcId": vpc.vpc_id,
                    },
                )
            ),
        )


class ModelStack(cdk.Stack):
    """Create a model from trained artifacts, then register it in the stack's package group."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        group = sagemaker.CfnModelPackageGroup(
            self, "Group", model_package_group_name="local-models"
        )
        create = tasks.SageMakerCreateModel(
            self,
            "Create model",
            model_name=sfn.JsonPath.string_at("$.name"),
            primary_container=tasks.ContainerDefinition(
                image=tasks.DockerImage.from_registry(IMAGE),
                model_s3_location=tasks.S3Location.from_json_expression("$.artifacts"),
            ),
            result_path="$.model",
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
                        {"Image": IMAGE, "ModelDataUrl": sfn.JsonPath.string_at("$.artifacts")}
                    ],
                    "SupportedContentTypes": ["application/json"],
                    "SupportedResponseMIMETypes": ["application/json"],
                },
            },
            iam_resources=["*"],
            result_path="$.package",
        )
        machine = sfn.StateMachine(
            self,
            "ModelMachine",
            definition_body=sfn.DefinitionBody.from_chainable(create.next(register)),
        )
        machine.node.add_dependency(group)


STACKS = {
    "Orders": OrdersStack,
    "Training": TrainingStack,
    "Jsonata": JsonataStack,
    "Nested": NestedStack,
    "Network": NetworkStack,
    "Model": ModelStack,
}


@dataclass
class Synthesized:
    outdir: Path

    def path(self, stack: str) -> Path:
        return self.outdir / f"Local{stack}.template.json"

    def template(self, stack: str) -> dict[str, Any]:
        return dict(json.loads(self.path(stack).read_text()))


def synthesize(outdir: Path) -> Synthesized:
    """Every stack into one cdk.out, with the asset metadata the CDK CLI asks for."""
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:enable-asset-metadata": True})
    environment = cdk.Environment(region="eu-west-1")
    for name, stack in STACKS.items():
        stack(app, f"Local{name}", env=environment)
    app.synth()
    return Synthesized(outdir)
