"""HeterogeneousTrainingJob on its own: validation at construction, tokens, options, packaging."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template

from hetero_constructs import (
    DistributedTraining,
    HeterogeneousTrainingJob,
    InstanceGroup,
    SpecValidationError,
    TrainingChannel,
    TrainingSpec,
    bucket_uri,
)
from hetero_constructs.constructs.packaging import source_bundle, tar_gz_bytes
from tests.fixtures.construct_specs import REPO, spec, stack
from tests.fixtures.templates import definitions, policy_statements, resources


def test_every_violation_is_raised_with_the_construct_path() -> None:
    with pytest.raises(SpecValidationError) as raised:
        HeterogeneousTrainingJob(
            stack(),
            "Job",
            spec=spec(
                instance_groups=[
                    InstanceGroup("data", "ml.c5.18xlarge", 1),
                    InstanceGroup("gpu", "ml.p4d.24xlarg", 0),
                ],
                max_run=0,
            ),
        )
    message = str(raised.value)
    assert "in Test/Job" in message
    assert {v.rule for v in raised.value.violations} == {
        "API-INSTANCE-TYPE",
        "HC-INSTANCE-COUNT",
        "API-STOPPING",
    }


def test_tokens_are_skipped_not_guessed() -> None:
    scope = stack(region=None)  # environment-agnostic: the region is a token
    bucket = s3.Bucket(scope, "Data")
    job = HeterogeneousTrainingJob(
        scope,
        "Job",
        spec=spec(
            channels=[
                TrainingChannel("train", bucket_uri(bucket, "train/"), instance_groups=["data"])
            ],
            output_path=bucket_uri(bucket.bucket_name, "out/"),
        ),
    )
    template = Template.from_stack(scope).to_json()
    image = job.request["AlgorithmSpecification"]["TrainingImage"]
    assert "${Token[" in image
    # The region's DLC account comes from aws-cdk-lib's region facts, as a mapping.
    mapping = next(iter(template["Mappings"].values()))
    assert mapping["us-west-2"] == {"value": "763104351884"}
    assert mapping["cn-north-1"] == {"value": "727897471807"}
    reads = policy_statements(template, "JobTaskExecutionRole")
    assert any(
        "s3:GetObject" in json.dumps(s["Action"]) and "train/*" in json.dumps(s["Resource"])
        for s in reads
    )


def test_core_and_cdk_agree_on_dlc_accounts() -> None:
    from aws_cdk.region_info import RegionInfo

    from hetero_constructs.service.catalog import DLC_ACCOUNTS

    disagreements = {
        region: (account, RegionInfo.get(region).dlc_repository_account)
        for region, account in DLC_ACCOUNTS.items()
        if RegionInfo.get(region).dlc_repository_account not in (None, account)
    }
    assert disagreements == {}


def test_prefixes_must_not_shadow_each_other() -> None:
    scope = stack()
    HeterogeneousTrainingJob(scope, "A", spec=spec(), job_name_prefix="train")
    with pytest.raises(ValueError, match="overlaps 'train'"):
        HeterogeneousTrainingJob(scope, "B", spec=spec(), job_name_prefix="train-big")
    with pytest.raises(ValueError, match="job_name_prefix 'bad_prefix'"):
        HeterogeneousTrainingJob(scope, "C", spec=spec(), job_name_prefix="bad_prefix")


def test_prefixes_must_not_shadow_each_other_across_the_stacks_of_an_app() -> None:
    from hetero_constructs import HeterogeneousTrainingTask

    app = cdk.App()
    env = cdk.Environment(region="us-west-2")
    first, second = (cdk.Stack(app, name, env=env) for name in ("Nightly", "Adhoc"))
    HeterogeneousTrainingJob(first, "Job", spec=spec(), job_name_prefix="train")
    for prefix in ("train", "train-big"):
        with pytest.raises(ValueError) as raised:
            HeterogeneousTrainingJob(
                second, f"Job{len(prefix)}", spec=spec(), job_name_prefix=prefix
            )
        message = str(raised.value)
        assert message.startswith(f"Adhoc/Job{len(prefix)}/")  # the construct refused
        assert "overlaps 'train' of Nightly/Job/" in message  # and the one it overlaps
    # A task in a user's state machine, in the first stack, against a job in the second.
    HeterogeneousTrainingJob(second, "Other", spec=spec(), job_name_prefix="eval")
    with pytest.raises(ValueError, match="overlaps 'eval' of Adhoc/Other/"):
        HeterogeneousTrainingTask(first, "Task", spec=spec(), job_name_prefix="eval-nightly")
    # Another app is another namespace.
    other_app_stack = cdk.Stack(cdk.App(), "Nightly", env=env)
    HeterogeneousTrainingJob(other_app_stack, "Job", spec=spec(), job_name_prefix="train")


def test_jobs_share_one_runner_and_get_distinct_default_prefixes() -> None:
    scope = stack()
    first = HeterogeneousTrainingJob(scope, "First", spec=spec())
    second = HeterogeneousTrainingJob(scope, "Second", spec=spec())
    assert first.runner is second.runner
    assert first.job_name_prefix != second.job_name_prefix
    assert first.job_name_prefix.startswith("first-")
    template = Template.from_stack(scope)
    template.resource_count_is("AWS::Lambda::Function", 2)
    template.resource_count_is("AWS::StepFunctions::StateMachine", 2)


def test_production_options_narrow_the_submit_permission() -> None:
    scope = stack()
    volume_key = kms.Key(scope, "VolumeKey", enable_key_rotation=True)
    output_key = kms.Key(scope, "OutputKey", enable_key_rotation=True)
    job = HeterogeneousTrainingJob(
        scope,
        "Job",
        spec=spec(
            subnets=["subnet-0abc1234"],
            security_group_ids=["sg-0abc1234"],
            enable_network_isolation=True,
            encrypt_inter_container_traffic=True,
            use_spot_instances=True,
            max_wait=172800,
            checkpoint_s3_uri="s3://data-bucket/checkpoints/",
            max_retry_attempts=2,
        ),
        volume_encryption_key=volume_key,
        output_encryption_key=output_key,
    )
    template = Template.from_stack(scope).to_json()
    control = policy_statements(template, "JobTaskControlRole")
    (create,) = [s for s in control if s["Action"] == "sagemaker:CreateTrainingJob"]
    condition = create["Condition"]
    assert condition["ForAllValues:StringEquals"]["sagemaker:VpcSubnets"] == ["subnet-0abc1234"]
    assert condition["ForAllValues:StringEquals"]["sagemaker:VpcSecurityGroupIds"] == [
        "sg-0abc1234"
    ]
    assert condition["Null"] == {"sagemaker:VpcSubnets": "false"}
    assert set(condition["ArnEquals"]) == {"sagemaker:VolumeKmsKey", "sagemaker:OutputKmsKey"}
    assert condition["Bool"] == {
        "sagemaker:NetworkIsolation": "true",
        "sagemaker:InterContainerTrafficEncryption": "true",
    }
    role = policy_statements(template, "JobTaskExecutionRole")
    actions = {
        a for s in role for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert {"kms:CreateGrant", "kms:Encrypt", "ec2:CreateNetworkInterface"} <= actions
    (definition,) = definitions(template).values()
    task = definition["States"]["Run training job"]
    assert task["TimeoutSeconds"] == 172800 + 6 * 3600  # spot: max_wait bounds the job
    request = job.request
    assert request["CheckpointConfig"] == {"S3Uri": "s3://data-bucket/checkpoints/"}
    assert request["InputDataConfig"][-1]["ChannelName"] == "code"


def test_schedule_and_alarms() -> None:
    scope = stack()
    topic = sns.Topic(scope, "Alerts", enforce_ssl=True)
    HeterogeneousTrainingJob(
        scope,
        "Job",
        spec=spec(),
        schedule=events.Schedule.rate(cdk.Duration.days(1)),
        schedule_input={"hyperparameters": {"epochs": 5}},
        alarm_topic=topic,
    )
    template = Template.from_stack(scope)
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 day)",
            "Targets": [
                Match.object_like(
                    {"Input": json.dumps({"hyperparameters": {"epochs": 5}}, separators=(",", ":"))}
                )
            ],
        },
    )
    alarms = resources(template.to_json(), "AWS::CloudWatch::Alarm")
    (job_alarm,) = [a for k, a in alarms.items() if k.startswith("JobRunsEndedBadly")]
    metrics = job_alarm["Properties"]["Metrics"]
    # One alarm per job: the sum of failed, timed-out and aborted executions.
    assert sorted(
        m["MetricStat"]["Metric"]["MetricName"] for m in metrics if "MetricStat" in m
    ) == [
        "ExecutionsAborted",
        "ExecutionsFailed",
        "ExecutionsTimedOut",
    ]
    (expression,) = [m for m in metrics if "Expression" in m]
    assert expression["ReturnData"] is True
    assert job_alarm["Properties"]["AlarmActions"]


def test_bad_schedule_input_fails_at_synth() -> None:
    with pytest.raises(SpecValidationError, match="OVERRIDE-CHANNEL"):
        HeterogeneousTrainingJob(
            stack(),
            "Job",
            spec=spec(),
            schedule=events.Schedule.rate(cdk.Duration.days(1)),
            schedule_input={"channels": {"validation": "s3://data-bucket/v/"}},
        )


def test_from_spec_file(tmp_path: Path) -> None:
    path = REPO / "examples" / "specs" / "hetero_torch_distributed.json"
    scope = stack()
    job = HeterogeneousTrainingJob.from_spec_file(scope, "Job", path)
    assert job.instance_types == ["ml.c5.18xlarge", "ml.p4d.24xlarge"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**json.loads(path.read_text()), "max_runs": 1}))
    with pytest.raises(SpecValidationError, match="SPEC-UNKNOWN-KEY"):
        HeterogeneousTrainingJob.from_spec_file(scope, "Bad", bad)


def test_given_role_is_used_and_granted() -> None:
    from aws_cdk import aws_iam as iam

    scope = stack()
    role = iam.Role(scope, "Mine", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec(), role=role)
    assert job.role is role
    template = Template.from_stack(scope).to_json()
    assert not [
        k for k in resources(template, "AWS::IAM::Role") if k.startswith("JobTaskExecutionRole")
    ]
    statements = policy_statements(template, "Mine")
    # The stack's shared policy is for the roles the library creates: a given role gets
    # everything inline, the login token and SageMaker's log group and metrics included.
    every_action = _actions(statements)
    assert {"ecr:GetAuthorizationToken", "cloudwatch:PutMetricData"} <= every_action
    assert {"logs:CreateLogGroup", "logs:CreateLogStream", "s3:GetObject"} <= every_action
    assert resources(template, "AWS::IAM::ManagedPolicy") == {}


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    return {
        action
        for s in statements
        for action in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }


def test_what_every_job_needs_is_one_managed_policy_per_stack() -> None:
    scope = stack()
    for index in range(3):
        HeterogeneousTrainingJob(scope, f"Job{index}", spec=spec(), job_name_prefix=f"j{index}")
    # A private registry's image: no ECR login token for that job, and no shared policy.
    HeterogeneousTrainingJob(
        scope,
        "Private",
        spec=spec(image_uri="registry.example.com/team/train:1", framework_version=None),
        job_name_prefix="private",
    )
    template = Template.from_stack(scope).to_json()
    ((policy_id, policy),) = resources(template, "AWS::IAM::ManagedPolicy").items()
    shared = _actions(policy["Properties"]["PolicyDocument"]["Statement"])
    assert shared == {
        "logs:CreateLogGroup",
        "logs:DescribeLogStreams",
        "cloudwatch:PutMetricData",
        "ecr:GetAuthorizationToken",
    }
    roles = resources(template, "AWS::IAM::Role")
    for index in range(3):
        (role_id,) = [k for k in roles if k.startswith(f"Job{index}TaskExecutionRole")]
        assert roles[role_id]["Properties"]["ManagedPolicyArns"] == [{"Ref": policy_id}]
        inline = roles[role_id]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
        assert not _actions(inline) & shared
        assert "logs:PutLogEvents" in _actions(inline)  # streams stay per job prefix
    (private_id,) = [k for k in roles if k.startswith("PrivateTaskExecutionRole")]
    assert "ManagedPolicyArns" not in roles[private_id]["Properties"]
    private = _actions(policy_statements(template, "PrivateTaskExecutionRole"))
    assert {"logs:CreateLogGroup", "cloudwatch:PutMetricData"} <= private
    assert not any(action.startswith("ecr:") for action in private)


def test_grant_start_execution() -> None:
    from aws_cdk import aws_iam as iam

    scope = stack()
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec())
    user = iam.Role(scope, "Scheduler", assumed_by=iam.AccountRootPrincipal())
    job.grant_start_execution(user)
    statements = policy_statements(Template.from_stack(scope).to_json(), "Scheduler")
    assert statements[0]["Action"] == "states:StartExecution"


def test_grant_redrive_execution_covers_the_machines_executions() -> None:
    from aws_cdk import aws_iam as iam

    scope = stack()
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec())
    operator = iam.Role(scope, "Operator", assumed_by=iam.AccountRootPrincipal())
    job.grant_redrive_execution(operator)
    template = Template.from_stack(scope).to_json()
    (statement,) = policy_statements(template, "Operator")
    assert statement["Action"] == "states:RedriveExecution"
    # Executions of this job's state machine only (arn:...:execution:NAME:*).
    assert ":execution:" in json.dumps(statement["Resource"])


def test_code_bundle_is_deterministic(tmp_path: Path) -> None:
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "train.py").write_text("print('hi')\n")
    (code / "pkg" / "util.py").write_text("X = 1\n")
    (code / "__pycache__").mkdir()
    (code / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"junk")
    first = tar_gz_bytes({"": code})
    (code / "train.py").touch()  # a new mtime changes nothing
    assert tar_gz_bytes({"": code}) == first
    with tarfile.open(fileobj=io.BytesIO(first), mode="r:gz") as archive:
        assert archive.getnames() == ["pkg", "pkg/util.py", "train.py"]
    assert source_bundle(code).read_bytes() == first
    (code / "train.py").write_text("print('changed')\n")
    assert tar_gz_bytes({"": code}) != first


def test_lone_entry_point_is_shipped_at_the_root(tmp_path: Path) -> None:
    script = tmp_path / "jobs" / "train.py"
    script.parent.mkdir()
    script.write_text("print('train')\n")
    job = HeterogeneousTrainingJob(
        stack(), "Job", spec=spec(source_dir=None, entry_point=str(script))
    )
    assert job.request["HyperParameters"]["sagemaker_program"] == '"train.py"'
    assert job.code_asset is not None
    from hetero_constructs.constructs.task import RUNTIME_HELPER, RUNTIME_HELPER_PACKAGE

    bundle = source_bundle(None, {RUNTIME_HELPER_PACKAGE: RUNTIME_HELPER, "train.py": script})
    with tarfile.open(bundle, mode="r:gz") as archive:
        assert "train.py" in archive.getnames()
        assert "jobs/train.py" not in archive.getnames()


def test_a_bundled_helper_copy_wins_and_names_stay_unique(tmp_path: Path) -> None:
    code = tmp_path / "code"
    (code / "hetero_runtime").mkdir(parents=True)
    (code / "train.py").write_text("print('train')\n")
    (code / "hetero_runtime" / "__init__.py").write_text("# my copy\n")
    job = HeterogeneousTrainingJob(stack(), "Job", spec=spec(source_dir=str(code)))
    assert job.code_asset is not None
    with tarfile.open(source_bundle(code), mode="r:gz") as archive:
        helper = archive.extractfile("hetero_runtime/__init__.py")
        assert helper is not None and helper.read() == b"# my copy\n"
    with pytest.raises(ValueError, match="same files"):
        tar_gz_bytes({"": code, "hetero_runtime": code / "hetero_runtime"})


def test_log_encryption_key_and_execution_data() -> None:
    scope = stack()
    key = kms.Key(scope, "LogKey", enable_key_rotation=True)
    HeterogeneousTrainingJob(
        scope, "Job", spec=spec(), log_encryption_key=key, include_execution_data=True
    )
    template = Template.from_stack(scope).to_json()
    (machine,) = resources(template, "AWS::StepFunctions::StateMachine").values()
    logging = machine["Properties"]["LoggingConfiguration"]
    assert logging["Level"] == "ALL" and logging["IncludeExecutionData"] is True
    groups = resources(template, "AWS::Logs::LogGroup")
    (own,) = [g for k, g in groups.items() if k.startswith("JobStateMachineLogs")]
    assert own["Properties"]["KmsKeyId"] == {
        "Fn::GetAtt": [next(iter(resources(template, "AWS::KMS::Key"))), "Arn"]
    }
    (key_resource,) = resources(template, "AWS::KMS::Key").values()
    statements = key_resource["Properties"]["KeyPolicy"]["Statement"]
    (logs_statement,) = [s for s in statements if "Service" in s.get("Principal", {})]
    assert logs_statement["Principal"]["Service"] == "logs.us-west-2.amazonaws.com"
    assert "kms:GenerateDataKey*" in logs_statement["Action"]


def test_cdk_network_objects_become_the_jobs_network_and_its_iam() -> None:
    from aws_cdk import aws_ec2 as ec2

    scope = stack()
    vpc = ec2.Vpc(scope, "Vpc", max_azs=2)
    job = HeterogeneousTrainingJob(scope, "Job", spec=spec(), vpc=vpc)
    template = Template.from_stack(scope).to_json()
    vpc_config = job.request["VpcConfig"]
    assert len(vpc_config["Subnets"]) == 2 and len(vpc_config["SecurityGroupIds"]) == 1
    # A security group is created that lets the job's instances reach each other.
    (ingress,) = resources(template, "AWS::EC2::SecurityGroupIngress").values()
    assert ingress["Properties"]["IpProtocol"] == "-1"
    assert ingress["Properties"]["SourceSecurityGroupId"] == ingress["Properties"]["GroupId"]
    control = policy_statements(template, "JobTaskControlRole")
    (create,) = [s for s in control if s["Action"] == "sagemaker:CreateTrainingJob"]
    condition = create["Condition"]["ForAllValues:StringEquals"]
    private = [k for k, r in resources(template, "AWS::EC2::Subnet").items() if "Private" in k]
    assert sorted(condition["sagemaker:VpcSubnets"]) == sorted(f"ref-{k.lower()}" for k in private)
    assert len(condition["sagemaker:VpcSecurityGroupIds"]) == 1
    # IConnectable: a database can open its port to the training jobs.
    database = ec2.SecurityGroup(scope, "Database", vpc=vpc)
    database.connections.allow_from(job, ec2.Port.tcp(5432))
    assert job.connections.security_groups


def test_the_users_security_groups_get_a_data_network_warning_the_tasks_do_not() -> None:
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk.assertions import Annotations

    def warnings(scope: cdk.Stack) -> list[str]:
        found = Annotations.from_stack(scope).find_warning("*", Match.any_value())
        return [str(w.entry.data) for w in found if "CDK-DATA-NETWORK" in str(w.entry.data)]

    own = stack()
    vpc = ec2.Vpc(own, "Vpc", max_azs=1)
    HeterogeneousTrainingJob(own, "Job", spec=spec(), vpc=vpc)
    assert warnings(own) == []  # the task's group allows traffic between the job's instances

    users = stack()
    vpc = ec2.Vpc(users, "Vpc", max_azs=1)
    group = ec2.SecurityGroup(users, "Group", vpc=vpc)
    HeterogeneousTrainingJob(users, "Job", spec=spec(), vpc=vpc, security_groups=[group])
    (warning,) = warnings(users)
    assert "must allow traffic between the job's instances" in warning

    raw_ids = stack()
    HeterogeneousTrainingJob(
        raw_ids,
        "Job",
        spec=spec(subnets=["subnet-0abc1234"], security_group_ids=["sg-0abc1234"]),
    )
    assert len(warnings(raw_ids)) == 1


def test_network_props_need_a_vpc_and_exclude_raw_ids() -> None:
    from aws_cdk import aws_ec2 as ec2

    scope = stack()
    vpc = ec2.Vpc(scope, "Vpc", max_azs=1)
    with pytest.raises(ValueError, match="without a vpc"):
        HeterogeneousTrainingJob(scope, "NoVpc", spec=spec(), vpc_subnets=ec2.SubnetSelection())
    with pytest.raises(ValueError, match="both vpc and"):
        HeterogeneousTrainingJob(
            scope,
            "Both",
            spec=spec(subnets=["subnet-0abc1234"], security_group_ids=["sg-0abc1234"]),
            vpc=vpc,
        )


def test_spec_files_take_stack_values_and_nothing_is_silently_ignored(tmp_path: Path) -> None:
    source = json.loads((REPO / "examples" / "specs" / "hetero_torch_distributed.json").read_text())
    source["source_dir"] = str(REPO / "examples" / "hetero_training")
    source["role"] = "arn:aws:iam::111122223333:role/TeamTraining"
    path = tmp_path / "training.json"
    path.write_text(json.dumps(source))
    scope = stack()
    bucket = s3.Bucket(scope, "Data")
    job = HeterogeneousTrainingJob.from_spec_file(
        scope,
        "Job",
        path,
        spec_overrides={"output_path": bucket_uri(bucket, "runs/"), "max_run": 7200},
    )
    assert "${Token[" in job.request["OutputDataConfig"]["S3OutputPath"]
    assert job.request["StoppingCondition"]["MaxRuntimeInSeconds"] == 7200
    # The spec's role is the execution role: imported, not replaced by a created one.
    assert job.request["RoleArn"] == "arn:aws:iam::111122223333:role/TeamTraining"
    template = Template.from_stack(scope).to_json()
    assert not any(k.startswith("JobTaskExecutionRole") for k in template["Resources"])
    other_region = {**source, "region": "eu-west-1"}
    path.write_text(json.dumps(other_region))
    with pytest.raises(SpecValidationError, match="CDK-REGION"):
        HeterogeneousTrainingJob.from_spec_file(stack(), "Job", path)
    with pytest.raises(TypeError, match="no prop 'no_such_field'"):
        HeterogeneousTrainingJob.from_spec_file(stack(), "Job", path, no_such_field=1)
    with pytest.raises(ValueError, match="spec_overrides has no TrainingSpec field 'no_such'"):
        HeterogeneousTrainingJob.from_spec_file(stack(), "Job", path, spec_overrides={"no_such": 1})
    # The old call style (a spec field as a keyword) is refused with the fix, never guessed.
    with pytest.raises(TypeError, match=r"spec_overrides=\{'output_path': \.\.\.\}"):
        HeterogeneousTrainingJob.from_spec_file(stack(), "Job", path, output_path="s3://b/r/")


# -- acknowledged warnings ---------------------------------------------------------------------

SMDDP_REASON = "p3dn.24xlarge is in the SDK's SMDDP list; validated on our cluster"


def smddp_on_p3dn(**changes: Any) -> TrainingSpec:
    """SMDDP on ml.p3dn.24xlarge: the warning LAU-SMDDP-INSTANCE."""
    return spec(
        framework_version="2.2.0",
        py_version="py310",
        instance_groups=[
            InstanceGroup("data", "ml.c5.18xlarge", 1),
            InstanceGroup("gpu", "ml.p3dn.24xlarge", 2),
        ],
        distribution=DistributedTraining.pytorch_ddp(instance_group="gpu"),
        **changes,
    )


def acknowledged_metadata(scope: cdk.Stack, control_role: str) -> Any:
    template = Template.from_stack(scope).to_json()
    (role,) = [
        r for k, r in resources(template, "AWS::IAM::Role").items() if k.startswith(control_role)
    ]
    return role.get("Metadata", {}).get("hetero-constructs:acknowledged")


def test_acknowledged_warnings_are_recorded_on_the_control_role() -> None:
    with pytest.raises(SpecValidationError, match=r"\[LAU-SMDDP-INSTANCE\]"):
        HeterogeneousTrainingJob(stack(), "Job", spec=smddp_on_p3dn())
    entry = {
        "rule": "LAU-SMDDP-INSTANCE",
        "path": "instance_groups[1].instance_type",
        "reason": SMDDP_REASON,
    }
    # In the spec, or as the construct's prop: the same record.
    for changes, props in (
        ({"acknowledgments": {"LAU-SMDDP-INSTANCE": SMDDP_REASON}}, {}),
        ({}, {"acknowledgments": {"LAU-SMDDP-INSTANCE": SMDDP_REASON}}),
    ):
        scope = stack()
        job = HeterogeneousTrainingJob(scope, "Job", spec=smddp_on_p3dn(**changes), **props)
        assert [(v.rule, reason) for v, reason in job.task.acknowledged] == [
            ("LAU-SMDDP-INSTANCE", SMDDP_REASON)
        ]
        assert acknowledged_metadata(scope, "JobTaskControlRole") == [entry]
    # Nothing acknowledged, nothing recorded.
    scope = stack()
    HeterogeneousTrainingJob(scope, "Job", spec=spec())
    assert acknowledged_metadata(scope, "JobTaskControlRole") is None


def test_acknowledging_an_error_is_refused_at_synth() -> None:
    with pytest.raises(SpecValidationError) as raised:
        HeterogeneousTrainingJob(
            stack(),
            "Job",
            spec=smddp_on_p3dn(),
            acknowledgments={
                "LAU-SMDDP-INSTANCE": SMDDP_REASON,
                "API-INSTANCE-TYPE": "we know better",
            },
        )
    (refused,) = raised.value.violations
    assert (refused.rule, refused.path) == ("ACK-RULE", "acknowledgments.API-INSTANCE-TYPE")
    assert "in Test/Job" in str(raised.value)
