"""``--upload SOURCE=S3_URI``: files of this machine put into the local account's S3 first."""

from __future__ import annotations

import os
from pathlib import Path

import boto3
import pytest

from hetero_constructs.cli import main
from hetero_constructs.local import LocalCloud
from hetero_constructs.local.uploads import Upload


def _tree(root: Path) -> Path:
    (root / "nested").mkdir(parents=True)
    (root / "a.csv").write_text("x,label\n1,0\n")
    (root / "nested" / "b.csv").write_text("x,label\n2,1\n")
    return root


def _objects(bucket: str) -> dict[str, bytes]:
    s3 = boto3.client("s3", region_name="us-west-2")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    return {key: s3.get_object(Bucket=bucket, Key=key)["Body"].read() for key in keys}


def test_a_folder_goes_under_the_prefix_and_the_bucket_is_created(tmp_path: Path) -> None:
    source = _tree(tmp_path / "train")
    with LocalCloud():
        written = Upload.parse(f"{source}=s3://my-data/datasets/train").put("us-west-2")
        assert written == [
            "s3://my-data/datasets/train/a.csv",
            "s3://my-data/datasets/train/nested/b.csv",
        ]
        assert _objects("my-data") == {
            "datasets/train/a.csv": b"x,label\n1,0\n",
            "datasets/train/nested/b.csv": b"x,label\n2,1\n",
        }


def test_a_file_goes_to_the_key_or_under_a_prefix(tmp_path: Path) -> None:
    source = _tree(tmp_path / "train") / "a.csv"
    with LocalCloud():
        Upload.parse(f"{source}=s3://my-data/exact/name.csv").put("us-west-2")
        Upload.parse(f"{source}=s3://my-data/under/").put("us-west-2")
        Upload.parse(f"{source}=s3://my-data").put("us-west-2")  # the bucket's top
        assert sorted(_objects("my-data")) == ["a.csv", "exact/name.csv", "under/a.csv"]


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"])
def test_the_shells_endpoint_url_is_not_where_the_local_cloud_sends_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    # The `export` line `local serve` prints (or a service's own), left in the shell: nothing
    # listens there now.
    monkeypatch.setenv(variable, "http://127.0.0.1:9")
    source = _tree(tmp_path / "train") / "a.csv"
    with LocalCloud():
        Upload.parse(f"{source}=s3://my-data/a.csv").put("us-west-2")
        assert _objects("my-data") == {"a.csv": b"x,label\n1,0\n"}
    assert os.environ[variable] == "http://127.0.0.1:9"  # the shell's, put back


@pytest.mark.parametrize(
    "text, expected",
    [
        ("no-separator", "is not SOURCE=s3://BUCKET/PREFIX"),
        ("=s3://bucket/x", "is not SOURCE=s3://BUCKET/PREFIX"),
        ("{tmp}=https://bucket/x", "is not an s3://BUCKET/PREFIX URI"),
        ("{tmp}=s3:///x", "is not an s3://BUCKET/PREFIX URI"),
        ("{tmp}/missing=s3://bucket/x", "does not exist on this machine"),
    ],
)
def test_a_bad_upload_says_what_is_wrong(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        Upload.parse(text.format(tmp=tmp_path))


def test_the_command_line_refuses_a_bad_upload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = tmp_path / "Stack.template.json"
    template.write_text('{"Resources": {}}')
    code = main(["run", "--local", str(template), "--upload", f"{tmp_path}/none=s3://b/x"])
    err = capsys.readouterr().err
    assert code == 1 and "--upload" in err and "does not exist on this machine" in err, err
    code = main(["run", "some-stack/Training", "--upload", f"{tmp_path}=s3://b/x"])
    err = capsys.readouterr().err
    assert code == 2 and "use it with --local" in err, err
