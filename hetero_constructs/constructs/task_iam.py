"""The IAM of a training task: its execution role and what it may reach, its control role.

The execution role is SageMaker's for the task's jobs: the channels, output, code, log streams,
image, keys and VPC of the spec, nothing else. The control role is what the shared Lambdas
assume for this task's jobs: create them (narrowed by condition keys to the spec), follow and
stop them, pass the execution role, and report to the state machines that contain the task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aws_cdk import aws_iam as iam
from constructs import Construct

from hetero_constructs.constructs import conditions, nag, permissions
from hetero_constructs.constructs.runner import CodeLocation, ContainingStateMachine, TrainingRunner
from hetero_constructs.constructs.tokens import at_synth, is_token
from hetero_constructs.spec import variants
from hetero_constructs.spec.training import TrainingSpec

_CONTROL_POLICY = "TrainingControl"


def acknowledge_executions(
    acknowledgments: nag.Acknowledgments, machines: Sequence[ContainingStateMachine]
) -> None:
    acknowledgments.wildcards(
        "Execution names are chosen when executions start; the control role may only "
        "describe executions of the state machines that contain this task (to stop a "
        "job whose execution has ended).",
        resources=[m.executions for m in machines],
    )


def execution_role(
    scope: Construct,
    *,
    arns: permissions.Arns,
    job_name_prefix: str,
    path: str,
    statements: list[permissions.Statement],
    shared: iam.IManagedPolicy | None,
) -> iam.Role:
    """SageMaker's role for this task's jobs, with SageMaker's confused-deputy conditions.

    Its own policy is inline: one resource per job instead of two.
    """
    document = permissions.document(statements)
    return iam.Role(
        scope,
        "ExecutionRole",
        assumed_by=iam.ServicePrincipal(
            permissions.SAGEMAKER,
            conditions={
                "StringEquals": {"aws:SourceAccount": arns.account},
                "ArnLike": {"aws:SourceArn": arns.training_jobs(job_name_prefix)},
            },
        ),
        description=f"SageMaker execution role of {path}",
        inline_policies={"Training": iam.PolicyDocument.from_json(document)},
        managed_policies=[shared] if shared is not None else None,
    )


def execution_statements(
    request: dict[str, Any],
    spec: TrainingSpec,
    arns: permissions.Arns,
    *,
    job_name_prefix: str,
    image_account: str | None,
    code_location: CodeLocation | None,
) -> tuple[list[permissions.Statement], bool, list[str], list[str]]:
    """The channels, output, code, log streams, image, keys and VPC of the job.

    Also whether the image is pulled from ECR, the channels' S3 prefixes (overrides may point
    only under them), and the S3 URIs read or written.
    """
    reads = [
        c["DataSource"]["S3DataSource"]["S3Uri"]
        for c in request.get("InputDataConfig", [])
        if c["ChannelName"] != "code"
    ]
    writes = [request["OutputDataConfig"]["S3OutputPath"]]
    # Channel overrides may point only under what the role is granted to read.
    channel_prefixes = list(reads)
    if spec.checkpoint_s3_uri:
        writes.append(spec.checkpoint_s3_uri)
        reads.append(spec.checkpoint_s3_uri)  # spot jobs resume from their checkpoints
    image = request["AlgorithmSpecification"]["TrainingImage"]
    pull = permissions.image_pull(arns, image, image_account)
    statements = [
        *permissions.s3_read(arns, reads),
        *permissions.s3_write(arns, writes),
        *permissions.log_streams(arns, job_name_prefix),
        *pull,
    ]
    if spec.subnets:
        statements += permissions.vpc_interfaces(arns, spec.subnets, spec.security_group_ids)
    for key, is_volume in ((spec.volume_kms_key, True), (spec.output_kms_key, False)):
        if key and (is_token(key) or key.startswith("arn:")):
            statements.append(permissions.kms_use(key, volume=is_volume))
    if code_location is not None:
        code = code_location
        code_object = f"arn:{arns.partition}:s3:::{code.bucket}/{code.key}"
        statements.append(permissions.allow(["s3:GetObject"], [code_object]))
    return statements, bool(pull), channel_prefixes, [*reads, *writes]


def acknowledge_execution_policy(
    acknowledgments: nag.Acknowledgments,
    *,
    arns: permissions.Arns,
    job_name_prefix: str,
    spec: TrainingSpec,
    statements: list[permissions.Statement],
    s3_uris: list[str],
) -> None:
    """Why each wildcard of the execution policy is needed (cdk-nag)."""
    prefixes = [location.objects_arn(arns) for location in permissions.locations(s3_uris)]
    acknowledgments.wildcards(
        "Channels are S3 prefixes: the job reads every object under each channel prefix and "
        "writes its artifacts and checkpoints under {output}/{job name}/, whose keys are not "
        "known at synth. Nothing outside these prefixes is granted.",
        resources=sorted(set(prefixes)),
    )
    acknowledgments.wildcards(
        "SageMaker names log streams {job name}/algo-N-...; the grant covers this job "
        "prefix's streams in /aws/sagemaker/TrainingJobs only.",
        resources=[permissions.training_log_streams(arns, job_name_prefix)],
    )
    acknowledgments.wildcards(
        "Only for actions without resource-level permissions: ecr:GetAuthorizationToken, "
        "cloudwatch:PutMetricData (restricted to SageMaker's namespace by condition) and, "
        "for VPC jobs, the ec2:Describe* calls SageMaker makes.",
        resources=["*"] if any(s["Resource"] == "*" for s in statements) else [],
    )
    if spec.subnets:
        acknowledgments.wildcards(
            "SageMaker creates and deletes the job's network interfaces, whose ids are not "
            "known before the job starts.",
            resources=[permissions.network_interfaces(arns)],
        )


def control_role(
    scope: Construct,
    *,
    runner: TrainingRunner,
    path: str,
    job_name_prefix: str,
    own: bool,
    document: Callable[[], dict[str, Any]],
    acknowledgments: nag.Acknowledgments,
) -> iam.CfnRole:
    """The role the shared Lambdas assume for this task's jobs (and nothing else).

    Its policy names the state machines that contain the task. A construct's own state
    machine is known now and named without a reference: the policy is inline. A user's
    state machine exists only once the user has built it, and names the role in its
    definition: the policy is then rendered at synth, in a resource of its own that names
    both (inline, the role and the state machine would each wait for the other).
    """
    # L1 under the path (and so the logical id) an L2 role has: in-flight runs name it.
    holder = Construct(scope, "ControlRole")
    role = iam.CfnRole(
        holder,
        "Resource",
        assume_role_policy_document={
            "Statement": [
                {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"AWS": arn}}
                for arn in runner.lambda_role_arns
            ],
            "Version": "2012-10-17",
        },
        description=f"Submits, follows and stops the training jobs of {path}",
        path=runner.control_role_path,
        policies=[{"policyName": _CONTROL_POLICY, "policyDocument": document()}] if own else None,
    )
    if not own:
        iam.CfnPolicy(
            scope,
            "ControlPolicy",
            policy_name=_CONTROL_POLICY,
            roles=[role.ref],
            policy_document=at_synth(document),
        )
    acknowledgments.wildcards(
        f"Training job names are derived per attempt under the prefix "
        f"'{job_name_prefix}-'; the wildcard covers exactly those jobs (creation is "
        "further narrowed by condition keys to what the spec declares).",
        resources=[runner.arns.training_jobs(job_name_prefix)],
    )
    return role


def control_statements(
    *,
    arns: permissions.Arns,
    job_name_prefix: str,
    request: dict[str, Any],
    spec: TrainingSpec,
    runner_id: str,
    role_arn: str,
    machines: Sequence[ContainingStateMachine],
) -> list[permissions.Statement]:
    """What the control role may do: this prefix's jobs, the role, its state machines."""
    jobs = arns.training_jobs(job_name_prefix)
    # A training plan's reserved capacity is used by naming the plan (SageMaker developer
    # guide, "IAM for SageMaker training plans": the plan user role).
    plan_arn = request["ResourceConfig"].get("TrainingPlanArn")
    statements = [
        permissions.allow(
            ["sagemaker:CreateTrainingJob"],
            [jobs, *([plan_arn] if plan_arn else [])],
            conditions.create_training_job(
                request,
                types=variants.instance_types(spec),
                runner_id=runner_id,
            ),
        ),
        permissions.allow(
            [
                "sagemaker:DescribeTrainingJob",
                "sagemaker:StopTrainingJob",
                "sagemaker:AddTags",
                "sagemaker:ListTags",
            ],
            [jobs],
        ),
        permissions.allow(
            ["iam:PassRole"],
            [role_arn],
            {"StringEquals": {"iam:PassedToService": permissions.SAGEMAKER}},
        ),
    ]
    if plan_arn:
        statements.append(permissions.allow(["sagemaker:DescribeTrainingPlan"], [plan_arn]))
    if machines:
        statements += [
            permissions.allow(
                # Heartbeat: whether a job's task is still open (a cancelled task's is not).
                ["states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"],
                [m.arn for m in machines],
            ),
            # Whether the execution still runs (a job whose execution ended is stopped), and
            # whether a task kept a success it heard while its submit call was in flight.
            permissions.allow(
                ["states:DescribeExecution", "states:GetExecutionHistory"],
                [m.executions for m in machines],
            ),
        ]
    return statements


__all__ = [
    "acknowledge_execution_policy",
    "acknowledge_executions",
    "control_role",
    "control_statements",
    "execution_role",
    "execution_statements",
]
