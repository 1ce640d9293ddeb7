"""S3 locations: bucket naming rules, and prefixes granted at a path boundary."""

from __future__ import annotations

import pytest

from hetero_constructs.spec.s3_uri import (
    S3Uri,
    bucket_name_problem,
    covers,
    has_dot_segment,
    key_patterns,
)
from tests.fixtures.specs import spec_dict, violations_of


@pytest.mark.parametrize(
    "name",
    ["abc", "my-bucket", "my.bucket.name", "a" * 63, "1bucket2", "amzn-s3-demo", "x-s3alias-y"],
)
def test_valid_bucket_names(name: str) -> None:
    assert bucket_name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("ab", "2 characters"),
        ("a" * 64, "64 characters"),
        ("Bad_Bucket!", "characters other than"),
        ("MyBucket", "characters other than"),
        ("-bucket", "begin and end"),
        ("bucket.", "begin and end"),
        ("my..bucket", "adjacent dots"),
        ("192.168.5.4", "IP address"),
        ("xn--bucket", "prefix xn--"),
        ("sthree-bucket", "prefix sthree-"),
        ("sthree-configurator-x", "prefix sthree-"),
        ("amzn-s3-demo-bucket", "prefix amzn-s3-demo-"),
        ("my-ap-abc123-s3alias", "suffix -s3alias"),
        ("my-olap--ol-s3", "suffix --ol-s3"),
        ("mfzwi23gnjvgw.mrap", "suffix .mrap"),
        ("fast--usw2-az1--x-s3", "suffix --x-s3"),
        ("tables--table-s3", "suffix --table-s3"),
    ],
)
def test_invalid_bucket_names(name: str, problem: str) -> None:
    found = bucket_name_problem(name)
    assert found is not None and problem in found


def test_every_s3_location_of_the_spec_is_checked() -> None:
    data = spec_dict(
        {
            "output_path": "s3://Bad_Bucket!/x",
            "checkpoint_s3_uri": "s3://UPPER/ckpt",
            "source_dir": "s3://a..b/code/sourcedir.tar.gz",
            "channels": {"train": {"s3_uri": "s3://10.0.0.1/t", "instance_groups": ["data"]}},
        }
    )
    paths = sorted(v.path for v in violations_of(data) if v.rule == "API-S3-BUCKET")
    assert paths == ["channels.train.s3_uri", "checkpoint_s3_uri", "output_path", "source_dir"]


def test_token_buckets_and_https_locations_are_skipped() -> None:
    from hetero_constructs.planning import plan
    from hetero_constructs.request.context import Deployment
    from hetero_constructs.spec.file.reader import read_spec

    data = spec_dict({"output_path": "s3://${Token[TOKEN.12]}/out"})
    spec = read_spec(data).spec
    assert spec is not None
    result = plan(spec, Deployment(), is_token=lambda v: isinstance(v, str) and "${Token[" in v)
    assert not [v for v in result.violations if v.rule == "API-S3-BUCKET"]
    https = spec_dict({"output_path": "https://Bad_Bucket.s3.amazonaws.com/out"})
    assert not [v for v in violations_of(https) if v.rule == "API-S3-BUCKET"]


@pytest.mark.parametrize(
    ("prefix", "patterns"),
    [
        ("", ["*"]),
        ("train/", ["train/*"]),
        ("train", ["train", "train/*"]),
        ("a/b", ["a/b", "a/b/*"]),
    ],
)
def test_key_patterns_end_at_a_path_boundary(prefix: str, patterns: list[str]) -> None:
    assert key_patterns(prefix) == patterns


@pytest.mark.parametrize(
    ("granted", "uri", "covered"),
    [
        ("s3://b/train", "s3://b/train", True),
        ("s3://b/train", "s3://b/train/", True),
        ("s3://b/train", "s3://b/train/v2/", True),
        ("s3://b/train/", "s3://b/train/v2/", True),
        ("s3://b/train/", "s3://b/train/", True),
        ("s3://b/train", "s3://b/train-nightly/", False),
        ("s3://b/train/", "s3://b/train-nightly/", False),
        ("s3://b/train/", "s3://b/train", False),
        ("s3://b/train", "s3://b/trai", False),
        ("s3://b/train", "s3://c/train/", False),
        ("s3://b", "s3://b/anything", True),
        ("s3://b/", "s3://b/anything", True),
    ],
)
def test_covers_matches_the_grant(granted: str, uri: str, covered: bool) -> None:
    granted_uri, location = S3Uri.parse(granted), S3Uri.parse(uri)
    assert granted_uri is not None and location is not None
    assert covers(granted_uri, location) is covered
    # The same answer as the IAM patterns (``*`` matches anything, ``/`` included).
    matches = granted_uri.bucket == location.bucket and any(
        location.key == p or (p.endswith("*") and location.key.startswith(p[:-1]))
        for p in key_patterns(granted_uri.key)
    )
    assert matches is covered


def test_parse_and_dot_segments() -> None:
    assert S3Uri.parse("s3://b/k/x") == S3Uri("b", "k/x")
    assert S3Uri.parse("s3://b") == S3Uri("b", "")
    assert S3Uri.parse("s3:///k") is None
    assert S3Uri.parse("https://b.s3.amazonaws.com/k") is None
    assert has_dot_segment("a/../b") and has_dot_segment("./a") and not has_dot_segment("a..b/c")
