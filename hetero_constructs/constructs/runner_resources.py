"""The resources a ``TrainingRunner`` creates under itself, one function each.

The run table, the dead-letter queue, the two Lambdas, the event rules and their permissions,
the alarms, and what the library's own state machines share (their role, the managed policy
of every training job, their log group). Each takes the runner as its scope, so the construct
paths and logical ids are the runner's.
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from hetero_constructs.constructs import nag, permissions
from hetero_constructs.constructs.lambda_bundle import DATA_PATH
from hetero_constructs.contract import lifecycle


def newest_python_runtime() -> lambda_.Runtime:
    """The newest Python runtime this aws-cdk-lib knows (cdk-nag's L1 asks for the newest)."""
    versions = [
        tuple(int(part) for part in name.removeprefix("PYTHON_").split("_"))
        for name in dir(lambda_.Runtime)
        if name.startswith("PYTHON_3_")
    ]
    major, minor = max(versions)
    return getattr(lambda_.Runtime, f"PYTHON_{major}_{minor}")  # type: ignore[no-any-return]


LAMBDA_RUNTIME = newest_python_runtime()
# What Step Functions needs of the role of the library's own state machines: invoking the
# submit function, log delivery and X-Ray (neither of the last two has resource-level permissions).
_LOG_DELIVERY_ACTIONS = [
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
]
_XRAY_ACTIONS = [
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
]


def run_table(scope: Construct) -> dynamodb.Table:
    """The run table: one item per training job slot, found by execution through its index."""
    table = dynamodb.Table(
        scope,
        "Runs",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        time_to_live_attribute="expires_at",
        removal_policy=RemovalPolicy.DESTROY,
    )
    table.add_global_secondary_index(
        index_name="byExecution",
        partition_key=dynamodb.Attribute(name="execution_arn", type=dynamodb.AttributeType.STRING),
        projection_type=dynamodb.ProjectionType.ALL,
    )
    return table


def dead_letter_queue(scope: Construct) -> sqs.Queue:
    """Events that could not be processed wait here (14 days) to be replayed."""
    return sqs.Queue(
        scope,
        "DeadLetters",
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
        removal_policy=RemovalPolicy.DESTROY,
    )


def runner_function(
    scope: Construct,
    name: str,
    handler: str,
    code: lambda_.Code,
    *,
    table: dynamodb.ITable,
    log_retention: logs.RetentionDays,
    log_encryption_key: kms.IKey | None,
    dead_letter_queue: sqs.IQueue | None = None,
) -> lambda_.Function:
    """One of the runner's Lambdas, with its own log group and role."""
    log_group = logs.LogGroup(
        scope,
        f"{name}Logs",
        retention=log_retention,
        encryption_key=log_encryption_key,
        removal_policy=RemovalPolicy.DESTROY,
    )
    role = iam.Role(
        scope,
        f"{name}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"hetero-constructs {name.lower()} Lambda",
    )
    log_group.grant_write(role)
    environment = {
        "TOKEN_TABLE": table.table_name,
        "AWS_DATA_PATH": f"/var/task/{DATA_PATH}",
    }
    if dead_letter_queue is not None:
        environment["DEAD_LETTER_QUEUE"] = dead_letter_queue.queue_url
    function = lambda_.Function(
        scope,
        f"{name}Function",
        runtime=LAMBDA_RUNTIME,
        handler=handler,
        code=code,
        role=role,
        log_group=log_group,
        timeout=Duration.seconds(lifecycle.SUBMIT_TIMEOUT_SECONDS if name == "Submit" else 300),
        memory_size=256,
        tracing=lambda_.Tracing.ACTIVE,
        environment=environment,
        dead_letter_queue=dead_letter_queue,
        retry_attempts=2 if name == "Events" else None,
    )
    return function


def event_rules(
    scope: Construct,
    *,
    runner_id: str,
    events_function_arn: str,
    dead_letters: sqs.Queue,
    dead_letters_arn: str,
    reconcile_interval: Duration,
) -> None:
    """Job ends (tagged with this runner), execution ends, and the reconcile schedule."""
    # Targets as jsii maps (its property names): struct objects cost type checks and
    # conversions for the same template.
    delivery: dict[str, Any] = {
        "deadLetterConfig": {"arn": dead_letters_arn},
        "retryPolicy": {"maximumEventAgeInSeconds": 24 * 3600, "maximumRetryAttempts": 8},
    }
    target = {"arn": events_function_arn, "id": "Lifecycle", **delivery}
    patterns = {
        "JobStateChange": (
            "Settles the waiting task of a training run when its job ends",
            {
                "source": [lifecycle.JOB_EVENT_SOURCE],
                "detail-type": [lifecycle.JOB_EVENT_TYPE],
                "detail": {
                    "TrainingJobStatus": list(lifecycle.TERMINAL_JOB_STATUSES),
                    "Tags": {lifecycle.TAG_RUNNER: [runner_id]},
                },
            },
        ),
        "ExecutionEnd": (
            "Stops the training jobs of an aborted, timed-out or failed execution",
            {
                "source": [lifecycle.EXECUTION_EVENT_SOURCE],
                "detail-type": [lifecycle.EXECUTION_EVENT_TYPE],
                "detail": {"status": list(lifecycle.STOPPING_EXECUTION_STATUSES)},
            },
        ),
    }
    # Each rule by its construct id, its ARN read once.
    rules: dict[str, str] = {}
    for construct_id, (description, pattern) in patterns.items():
        rules[construct_id] = events.CfnRule(
            scope,
            construct_id,
            description=description,
            event_pattern=pattern,
            targets=[target],
        ).attr_arn
    schedule_target = {
        "arn": events_function_arn,
        "id": "Reconcile",
        "input": json.dumps({"action": "reconcile"}),
        **delivery,
    }
    rules["Reconcile"] = events.CfnRule(
        scope,
        "Reconcile",
        description="Converges training runs whatever events were lost",
        schedule_expression=f"rate({int(reconcile_interval.to_minutes())} minutes)",
        targets=[schedule_target],
    ).attr_arn
    for construct_id, rule_arn in rules.items():
        lambda_.CfnPermission(
            scope,
            f"{construct_id}Invoke",
            action="lambda:InvokeFunction",
            function_name=events_function_arn,
            principal="events.amazonaws.com",
            source_arn=rule_arn,
        )
    dead_letters.add_to_resource_policy(
        iam.PolicyStatement(
            actions=["sqs:SendMessage"],
            principals=[iam.ServicePrincipal("events.amazonaws.com")],
            resources=[dead_letters_arn],
            conditions={"ArnEquals": {"aws:SourceArn": list(rules.values())}},
        )
    )


def alarms(
    scope: Construct,
    *,
    alarm_topic: sns.ITopic | None,
    dead_letters: sqs.Queue,
    submit_function: lambda_.Function,
    events_function: lambda_.Function,
) -> list[cloudwatch.CfnAlarm]:
    """Dead-lettered events, and errors of either Lambda (missing data is OK)."""
    actions = [alarm_topic.topic_arn] if alarm_topic is not None else None

    def alarm(construct_id: str, description: str, **metric: Any) -> cloudwatch.CfnAlarm:
        return cloudwatch.CfnAlarm(
            scope,
            construct_id,
            statistic="Maximum" if metric["metric_name"].startswith("Approx") else "Sum",
            period=300,
            evaluation_periods=1,
            threshold=1,
            comparison_operator="GreaterThanOrEqualToThreshold",
            treat_missing_data="notBreaching",
            alarm_description=description,
            alarm_actions=actions,
            **metric,
        )

    return [
        alarm(
            "DeadLettersAlarm",
            "Training-run events failed and wait in the dead-letter queue; replay them "
            "once the cause is fixed (README: Reliability)",
            namespace="AWS/SQS",
            metric_name="ApproximateNumberOfMessagesVisible",
            dimensions=[{"name": "QueueName", "value": dead_letters.queue_name}],
        ),
        *(
            alarm(
                f"{construct_id}ErrorsAlarm",
                f"The training runner's {construct_id} Lambda failed",
                namespace="AWS/Lambda",
                metric_name="Errors",
                dimensions=[{"name": "FunctionName", "value": function.function_name}],
            )
            for construct_id, function in (
                ("SubmitFunction", submit_function),
                ("EventsFunction", events_function),
            )
        ),
    ]


def state_machine_role(scope: Construct, submit_function_arn: str, nag_ids: nag.NagIds) -> iam.Role:
    """One role for every ``HeterogeneousTrainingJob`` state machine of the stack.

    Its policy is inline: it is the same for every job, and a state machine that names the
    role (``Fn::GetAtt``) is created after it, policy included, without a ``DependsOn``.
    """
    document = permissions.document(
        [
            permissions.allow(["lambda:InvokeFunction"], [submit_function_arn]),
            permissions.allow(_LOG_DELIVERY_ACTIONS, ["*"]),
            permissions.allow(_XRAY_ACTIONS, ["*"]),
        ]
    )
    role = iam.Role(
        scope,
        "StateMachineRole",
        assumed_by=iam.ServicePrincipal("states.amazonaws.com"),
        description="hetero-constructs training state machines",
        inline_policies={"StateMachines": iam.PolicyDocument.from_json(document)},
    )
    nag.Acknowledgments(role, nag_ids).wildcards(
        "Step Functions X-Ray tracing and log delivery to CloudWatch Logs support only '*'.",
        resources=["*"],
    ).record()
    return role


def training_jobs_policy(
    scope: Construct, arns: permissions.Arns, nag_ids: nag.NagIds
) -> iam.ManagedPolicy:
    """What every training job's execution role needs, once for the stack's roles.

    ``permissions.every_training_job``: the same statements for every job, so one managed
    policy instead of a copy in each role's inline policy.
    """
    document = permissions.document(permissions.every_training_job(arns))
    policy = iam.ManagedPolicy(
        scope,
        "TrainingJobsPolicy",
        description="What every hetero-constructs training job of the stack needs",
        document=iam.PolicyDocument.from_json(document),
    )
    nag.Acknowledgments(policy, nag_ids).wildcards(
        "Only for actions without resource-level permissions: ecr:GetAuthorizationToken "
        "and cloudwatch:PutMetricData (restricted to SageMaker's namespace by condition).",
        resources=["*"],
    ).record()
    return policy


def state_machine_logs(
    scope: Construct,
    runner_id: str,
    retention: logs.RetentionDays,
    encryption_key: kms.IKey | None,
) -> logs.LogGroup:
    """One log group for the stack's training state machines (unless a job has its own)."""
    return logs.LogGroup(
        scope,
        "StateMachineLogs",
        log_group_name=f"/aws/vendedlogs/states/{runner_id}",
        retention=retention,
        encryption_key=encryption_key,
        removal_policy=RemovalPolicy.DESTROY,
    )


__all__ = [
    "LAMBDA_RUNTIME",
    "alarms",
    "dead_letter_queue",
    "event_rules",
    "newest_python_runtime",
    "run_table",
    "runner_function",
    "state_machine_logs",
    "state_machine_role",
    "training_jobs_policy",
]
