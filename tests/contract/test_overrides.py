"""Execution-input overrides cannot reach beyond the spec's grants (issue 9 item 6)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hetero_constructs.contract.overrides import STEP_FUNCTIONS_KEY_PREFIX, apply_overrides
from hetero_constructs.spec.file.reader import read_spec, spec_from_dict
from hetero_constructs.spec.file.writer import spec_to_dict
from hetero_constructs.spec.violations import MAX_REPORTED_VIOLATIONS, Violation
from tests.fixtures.specs import spec_dict

# The spec as the submit Lambda gets it: channel train at s3://bucket/train (no slash).
SPEC = spec_to_dict(spec_from_dict(spec_dict()))


def rules(overrides: Any, **options: Any) -> list[tuple[str, str]]:
    result = apply_overrides(SPEC, overrides, **options)
    return [(v.rule, v.path) for v in result.violations]


def channel(uri: str) -> dict[str, Any]:
    return {"channels": {"train": uri}}


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bucket/train",
        "s3://bucket/train/",
        "s3://bucket/train/v2/",
        "s3://bucket/train/2026/11/30/part-0.csv",
    ],
)
def test_channel_overrides_under_the_granted_prefix_are_applied(uri: str) -> None:
    result = apply_overrides(SPEC, channel(uri))
    assert result.violations == ()
    assert result.spec["channels"]["train"]["s3_uri"] == uri
    assert result.spec["channels"]["train"]["instance_groups"] == ["data"]  # scoping stays
    reading = read_spec(result.spec)
    assert reading.spec is not None and reading.spec.channels[0].s3_uri == uri


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bucket/train-nightly/",  # a sibling prefix: not at a path boundary
        "s3://bucket/trainer",
        "s3://bucket/",
        "s3://other-bucket/train/",  # another bucket
        "https://bucket.s3.amazonaws.com/train/",  # not s3://
        "s3://bucket/train/../secrets/",  # resolved by some clients
        "s3://bucket/train/./x",
        "s3://bucketx/train/",
    ],
)
def test_channel_overrides_beyond_the_grants_are_refused(uri: str) -> None:
    result = apply_overrides(SPEC, channel(uri))
    assert [(v.rule, v.path) for v in result.violations] == [
        ("OVERRIDE-CHANNEL-PREFIX", "execution input.channels.train")
    ]
    assert "s3://bucket/train" in result.violations[0].allowed
    assert result.spec["channels"] == SPEC["channels"]  # nothing applied


def test_a_granted_prefix_with_a_slash_covers_the_same_locations() -> None:
    granted = ["s3://bucket/train/"]
    assert rules(channel("s3://bucket/train/v2/"), channel_prefixes=granted) == []
    assert rules(channel("s3://bucket/train-nightly/"), channel_prefixes=granted) != []
    # SageMaker would list every key starting with "train" (train-nightly/ too), which the
    # grant of train/ does not cover.
    assert rules(channel("s3://bucket/train"), channel_prefixes=granted) != []


def test_the_constructs_pass_the_exact_granted_prefixes() -> None:
    granted = ["s3://bucket/train", "s3://archive/datasets/"]
    assert rules(channel("s3://archive/datasets/2025/"), channel_prefixes=granted) == []
    assert rules(channel("s3://archive/other/"), channel_prefixes=granted) != []
    assert rules(channel("s3://bucket/train/v2/"), channel_prefixes=[]) == [
        ("OVERRIDE-CHANNEL-PREFIX", "execution input.channels.train")
    ]
    # A whole bucket grants every key in it.
    assert rules(channel("s3://archive/any/thing"), channel_prefixes=["s3://archive"]) == []


def test_token_bucket_names_match_themselves() -> None:
    token = "s3://${Token[TOKEN.123]}/train/"
    spec = {**SPEC, "channels": {"train": {"s3_uri": token, "instance_groups": ["data"]}}}
    ok = apply_overrides(spec, channel("s3://${Token[TOKEN.123]}/train/v2/"))
    assert ok.violations == ()
    refused = apply_overrides(spec, channel("s3://${Token[TOKEN.999]}/train/v2/"))
    assert [v.rule for v in refused.violations] == ["OVERRIDE-CHANNEL-PREFIX"]


def test_undeclared_channels_and_wrong_types_are_still_violations() -> None:
    assert rules({"channels": {"validation": "s3://bucket/train/v"}}) == [
        ("OVERRIDE-CHANNEL", "execution input.channels.validation")
    ]
    assert rules({"channels": {"train": 3}}) == [
        ("OVERRIDE-TYPE", "execution input.channels.train")
    ]
    assert rules({"channels": ["s3://bucket/train"]}) == [
        ("OVERRIDE-TYPE", "execution input.channels")
    ]


@pytest.mark.parametrize(
    ("tags", "path"),
    [
        ({"run": "line\nbreak"}, "execution input.tags.run"),
        ({"run": "tab\there"}, "execution input.tags.run"),
        ({"bad\nkey": "x"}, "execution input.tags.bad\\nkey"),
        ({"run": "x" * 257}, "execution input.tags.run"),
        ({"": "x"}, "execution input.tags."),
        ({"run": "semi;colon"}, "execution input.tags.run"),
    ],
)
def test_tags_must_fit_the_api_pattern(tags: dict[str, str], path: str) -> None:
    result = apply_overrides(SPEC, {"tags": tags})
    assert [(v.rule, v.path) for v in result.violations] == [("OVERRIDE-VALUE", path)]
    assert "Tags[]" in result.violations[0].problem
    assert "tags" not in result.spec or result.spec["tags"] == SPEC.get("tags")


def test_valid_tags_merge_over_the_spec_tags() -> None:
    spec = {**SPEC, "tags": [{"Key": "team", "Value": "ml"}]}  # the SDK's list form
    result = apply_overrides(spec, {"tags": {"run": "42 nightly", "team": "ml-platform"}})
    assert result.violations == ()
    assert result.spec["tags"] == {"team": "ml-platform", "run": "42 nightly"}


@pytest.mark.parametrize("prefix", ["bad_prefix", "-leading", "x" * 64, "", "new\nline", "ünï"])
def test_job_name_prefix_must_fit_the_training_job_name(prefix: str) -> None:
    result = apply_overrides(SPEC, {"job_name_prefix": prefix})
    assert [(v.rule, v.path) for v in result.violations] == [
        ("OVERRIDE-VALUE", "execution input.job_name_prefix")
    ]
    assert result.job_name_prefix is None


def test_a_valid_job_name_prefix_is_returned() -> None:
    assert apply_overrides(SPEC, {"job_name_prefix": "nightly-2"}).job_name_prefix == "nightly-2"


def test_step_functions_keys_are_not_overrides() -> None:
    overrides = {
        "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": "arn:aws:states:us-west-2:1:execution:p:1",
        f"{STEP_FUNCTIONS_KEY_PREFIX}SOMETHING_NEW": True,
        "hyperparameters": {"epochs": 2},
    }
    result = apply_overrides(SPEC, overrides)
    assert result.violations == ()
    assert "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID" not in result.spec
    assert result.spec["hyperparameters"] == {"epochs": 2}
    assert rules({"AWS_STEPFUNCTIONS_X": 1}) == [
        ("OVERRIDE-UNKNOWN-KEY", "execution input.AWS_STEPFUNCTIONS_X")
    ]


def test_unknown_keys_name_the_likely_key() -> None:
    result = apply_overrides(SPEC, {"hyperparameter": {"epochs": 2}})
    assert [v.fix for v in result.violations] == ["did you mean 'hyperparameters'?"]


def test_hyperparameter_overrides_are_json_values() -> None:
    deep: list[Any] = []
    for _ in range(5_000):
        deep = [deep]
    assert rules({"hyperparameters": {"a": deep}})[0][0] == "OVERRIDE-TYPE"
    assert rules({"hyperparameters": {"a": float("nan")}}) == [
        ("OVERRIDE-TYPE", "execution input.hyperparameters.a")
    ]
    assert rules({"hyperparameters": {"a": 2**70}}) == [
        ("OVERRIDE-TYPE", "execution input.hyperparameters.a")
    ]


def cause_size(violations: tuple[Violation, ...]) -> int:
    """The characters Step Functions keeps of the submit Lambda's failure.

    The Lambda raises the violations' JSON as its error message; the cause is the Lambda's
    error JSON, which escapes that message once more.
    """
    message = json.dumps({"violations": [v.to_dict() for v in violations]})
    return len(json.dumps({"errorMessage": message, "errorType": "InvalidOverrides"}))


@pytest.mark.parametrize(
    "overrides",
    [
        {f"unknown-{i}": i for i in range(1_000)},
        {"😀" * 5_000 + str(i): '"' * 5_000 for i in range(1_000)},
        {
            "channels": {f'"{"😀" * 2_000}{i}': "s3://x/" + '"' * 900 for i in range(500)},
            "tags": {f"k{i}": "\n" * 256 for i in range(500)},
        },
    ],
    ids=["many keys", "huge keys", "huge values"],
)
def test_huge_inputs_give_a_bounded_report(overrides: dict[str, Any]) -> None:
    result = apply_overrides(SPEC, overrides)
    assert len(result.violations) == MAX_REPORTED_VIOLATIONS + 1
    more = result.violations[-1]
    assert more.rule == "MORE-VIOLATIONS" and more.path == "execution input"
    assert more.problem.startswith(f"... and {more.value} more violations")
    assert cause_size(result.violations) < 32_768


def test_a_long_granted_list_is_cut_in_the_message() -> None:
    granted = [f"s3://bucket-{i}/{'p' * 900}/" for i in range(20)]
    result = apply_overrides(SPEC, channel("s3://elsewhere/x/"), channel_prefixes=granted)
    allowed = result.violations[0].allowed
    assert allowed.startswith("s3:// URIs under s3://bucket-0/pp") and allowed.endswith(
        "and 17 more"
    )


def test_a_channel_uri_under_the_grant_still_fits_the_api_length() -> None:
    uri = "s3://bucket/train/" + "k" * 1_100
    assert rules(channel(uri)) == [("OVERRIDE-VALUE", "execution input.channels.train")]
    assert rules(channel("bucket/train")) == [
        ("OVERRIDE-CHANNEL-PREFIX", "execution input.channels.train")
    ]
