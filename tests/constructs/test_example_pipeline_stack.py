"""The example pipeline users copy passes the library's own bar (issue 23, item 11): a model role
scoped to the training output and the training image, an encrypted topic, alarms that notify."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk

from app import HeteroTrainingPipelineStack
from tests.fixtures.example_app import Synthesized
from tests.fixtures.templates import literal, policy_statements, resources

PIPELINE = "HeteroTrainingPipeline"
TOPIC_ARN = "arn:aws:sns:us-west-2:111122223333:platform-alerts"


def template_of(example: Synthesized) -> dict[str, Any]:
    return json.loads((example.outdir / f"{PIPELINE}.template.json").read_text())  # type: ignore[no-any-return]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_model_role_reads_the_training_output_and_pulls_the_named_image(
    example: Synthesized,
) -> None:
    template = template_of(example)
    statements = policy_statements(template, "ModelRole")
    assert statements
    granted = {
        (action, resource)
        for statement in statements
        for action in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    }
    pipeline = example.app.node.find_child(PIPELINE)
    image = pipeline.train.request["AlgorithmSpecification"]["TrainingImage"]  # type: ignore[attr-defined]
    account, _, _, region, *_ = image.split("/")[0].split(".")
    repository = image.split("/", 1)[1].split(":")[0]
    repository_arn = f"arn:aws:ecr:{region}:{account}:repository/{repository}"
    assert granted == {
        ("s3:GetObject", "arn:aws:s3:::example-training-data/training-output/hetero-pipeline-*"),
        ("ecr:BatchCheckLayerAvailability", repository_arn),
        ("ecr:GetDownloadUrlForLayer", repository_arn),
        ("ecr:BatchGetImage", repository_arn),
        # No resource-level permissions exist for the login token.
        ("ecr:GetAuthorizationToken", "*"),
    }
    # The model is created with that image (not whatever image the state's input names).
    (machine,) = resources(template, "AWS::StepFunctions::StateMachine").values()
    definition = json.dumps(machine["Properties"]["DefinitionString"])
    assert f"/{repository}:2.3.0-gpu-py311" in definition


def test_the_topic_is_encrypted_with_a_rotated_key_its_publishers_may_use(
    example: Synthesized,
) -> None:
    template = template_of(example)
    ((topic_id, topic),) = resources(template, "AWS::SNS::Topic").items()
    key_id = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key = template["Resources"][key_id]
    assert key["Type"] == "AWS::KMS::Key" and key["Properties"]["EnableKeyRotation"] is True
    alarms_may_publish = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert [sorted(as_list(s["Action"])) for s in alarms_may_publish] == [
        ["kms:Decrypt", "kms:GenerateDataKey"]
    ]
    # The pipeline publishes its failures: to the topic, with the key.
    pipeline_role = policy_statements(template, "PipelineRole")
    kms_use = [s for s in pipeline_role if "kms:GenerateDataKey" in as_list(s["Action"])]
    assert [(sorted(s["Action"]), s["Resource"]) for s in kms_use] == [
        (["kms:Decrypt", "kms:GenerateDataKey"], literal({"Fn::GetAtt": [key_id, "Arn"]}, template))
    ]
    publish = [s for s in pipeline_role if s["Action"] == "sns:Publish"]
    assert [s["Resource"] for s in publish] == [literal({"Ref": topic_id}, template)]


def test_every_alarm_notifies_the_topic(example: Synthesized) -> None:
    template = template_of(example)
    (topic_id,) = resources(template, "AWS::SNS::Topic")
    alarms = resources(template, "AWS::CloudWatch::Alarm")
    # The runner's (dead letters, two Lambdas' errors) and the pipeline's failed runs.
    assert len(alarms) == 4
    for alarm_id, alarm in alarms.items():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}], alarm_id
    failed_runs = [
        a for a in alarms.values() if a["Properties"]["MetricName"] == "ExecutionsFailed"
    ]
    assert len(failed_runs) == 1


def test_the_alarms_can_notify_a_topic_of_ones_own() -> None:
    app = cdk.App(context={"notification_topic_arn": TOPIC_ARN})
    stack = HeteroTrainingPipelineStack(
        app, PIPELINE, env=cdk.Environment(region="us-west-2", account="111122223333")
    )
    template = app.synth().get_stack_by_name(stack.stack_name).template
    assert resources(template, "AWS::SNS::Topic") == {}
    alarms = resources(template, "AWS::CloudWatch::Alarm")
    assert len(alarms) == 4
    assert all(a["Properties"]["AlarmActions"] == [TOPIC_ARN] for a in alarms.values())
    publish = [
        s for s in policy_statements(template, "PipelineRole") if s["Action"] == "sns:Publish"
    ]
    assert [s["Resource"] for s in publish] == [TOPIC_ARN]
