"""EventBridge pattern matching, on the pattern features aws-cdk-lib emits."""

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
        ({"detail": {"TrainingJobName": [{"wildcard": "het*-?"}]}}, True),
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
    with pytest.raises(ValueError, match="cidr"):
        matches({"source": [{"cidr": "10.0.0.0/24"}]}, JOB_EVENT)
