"""EventBridge pattern matching (moto's matcher, the pattern checked first), on the pattern
features aws-cdk-lib emits and on the library's own rules."""

from __future__ import annotations

from typing import Any

import pytest

from hetero_constructs.local import matches

JOB_EVENT: dict[str, Any] = {
    "source": "aws.sagemaker",
    "detail-type": "SageMaker Training Job State Change",
    "resources": ["arn:aws:sagemaker:eu-west-1:123456789012:training-job/hetero-a"],
    "detail": {
        "TrainingJobName": "hetero-a",
        "TrainingJobStatus": "Failed",
        "BillableTimeInSeconds": 360,
        "FailureReason": None,
        "Tags": {"team": "ml"},
    },
}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"source": ["aws.sagemaker"]}, True),
        ({"source": ["aws.states"]}, False),
        ({"detail": {"TrainingJobStatus": ["Completed", "Failed"]}}, True),
        ({"detail": {"TrainingJobName": [{"prefix": "hetero-"}]}}, True),
        ({"detail": {"TrainingJobName": [{"prefix": "other-"}]}}, False),
        ({"detail": {"TrainingJobName": [{"suffix": "-a"}]}}, True),
        ({"detail": {"TrainingJobName": [{"equals-ignore-case": "HETERO-A"}]}}, True),
        ({"detail": {"TrainingJobName": [{"wildcard": "het*-a"}]}}, True),
        # EventBridge's only wildcard character is "*": "?" is itself.
        ({"detail": {"TrainingJobName": [{"wildcard": "het*-?"}]}}, False),
        ({"detail": {"TrainingJobStatus": [{"anything-but": "Completed"}]}}, True),
        ({"detail": {"TrainingJobStatus": [{"anything-but": ["Failed", "Stopped"]}]}}, False),
        ({"detail": {"TrainingJobName": [{"anything-but": {"prefix": "hetero"}}]}}, False),
        ({"detail": {"FailureReason": [None]}}, True),
        ({"detail": {"FailureReason": [{"exists": True}]}}, True),
        ({"detail": {"SecondaryStatus": [{"exists": False}]}}, True),
        ({"detail": {"SecondaryStatus": [{"exists": True}]}}, False),
        ({"detail": {"SecondaryStatus": ["Failed"]}}, False),  # absent field: no match
        ({"detail": {"BillableTimeInSeconds": [{"numeric": [">", 300, "<=", 360]}]}}, True),
        ({"detail": {"BillableTimeInSeconds": [{"numeric": ["<", 300]}]}}, False),
        ({"detail": {"BillableTimeInSeconds": [360.0]}}, True),
        ({"detail": {"Tags": {"team": ["ml"]}}}, True),
        ({"detail": {"Missing": {"inner": ["x"]}}}, False),
        ({"resources": [{"prefix": "arn:aws:sagemaker:eu-west-1"}]}, True),  # any element
        ({"$or": [{"source": ["x"]}, {"detail": {"TrainingJobStatus": ["Failed"]}}]}, True),
        ({"$or": [{"source": ["x"]}, {"detail": {"TrainingJobStatus": ["Stopped"]}}]}, False),
    ],
)
def test_pattern(pattern: dict[str, Any], expected: bool) -> None:
    assert matches(pattern, JOB_EVENT) is expected


def test_a_scalar_where_an_array_belongs_is_refused() -> None:
    with pytest.raises(ValueError, match="array"):
        matches({"source": "aws.sagemaker"}, JOB_EVENT)


def test_an_unknown_matcher_is_refused_by_name() -> None:
    """moto's matcher takes a matcher it does not know for a match; PutRule refuses it."""
    with pytest.raises(ValueError, match="'prefx' is not one EventBridge has"):
        matches({"source": [{"prefx": "aws."}]}, JOB_EVENT)
    with pytest.raises(ValueError, match=r"'detail\.TrainingJobName'.*'sufix'"):
        matches({"detail": {"TrainingJobName": [{"anything-but": {"sufix": "-a"}}]}}, JOB_EVENT)


def _rule_patterns(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The event patterns of a synthesized template's rules, by logical id prefix."""
    return {
        logical_id: resource["Properties"]["EventPattern"]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Events::Rule" and "EventPattern" in resource["Properties"]
    }


def _job_event(status: str, tags: dict[str, str] | None) -> dict[str, Any]:
    detail: dict[str, Any] = {**JOB_EVENT["detail"], "TrainingJobStatus": status}
    if tags is None:
        del detail["Tags"]
    else:
        detail["Tags"] = tags
    return {**JOB_EVENT, "detail": detail}


def _execution_event(status: str) -> dict[str, Any]:
    return {
        "source": "aws.states",
        "detail-type": "Step Functions Execution Status Change",
        "resources": ["arn:aws:states:eu-west-1:123456789012:execution:m:run"],
        "detail": {"status": status, "error": None, "output": None},
    }


def test_the_librarys_rules_match_what_they_are_for(example: Any) -> None:
    """The runner's two rules, as the example app synthesizes them, on the events the local
    account emits: each job's end with its runner's tag, and an execution's unsuccessful end."""
    patterns = _rule_patterns(example.template)
    (job_rule,) = [p for logical_id, p in patterns.items() if "JobStateChange" in logical_id]
    (end_rule,) = [p for logical_id, p in patterns.items() if "ExecutionEnd" in logical_id]
    (runner_tag,) = job_rule["detail"]["Tags"].items()
    mine = {runner_tag[0]: runner_tag[1][0], "team": "ml"}
    for status in ("Completed", "Failed", "Stopped"):
        assert matches(job_rule, _job_event(status, mine))
    for status in ("InProgress", "Stopping"):
        assert not matches(job_rule, _job_event(status, mine))
    assert not matches(job_rule, _job_event("Failed", {runner_tag[0]: "another-runner"}))
    assert not matches(job_rule, _job_event("Failed", {}))
    assert not matches(job_rule, _job_event("Failed", None))
    assert not matches(job_rule, _execution_event("FAILED"))
    for status in ("FAILED", "ABORTED", "TIMED_OUT"):
        assert matches(end_rule, _execution_event(status))
    for status in ("RUNNING", "SUCCEEDED", "PENDING_REDRIVE"):
        assert not matches(end_rule, _execution_event(status))
    assert not matches(end_rule, _job_event("Failed", mine))
