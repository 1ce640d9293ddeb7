"""A template's CDK assets are published into the local account's S3 before it is deployed, as
``cdk deploy`` publishes them: the code bundle a job's request names is there, byte for byte."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import boto3
import pytest

from hetero_constructs.cli import main
from hetero_constructs.local import LocalCloud
from hetero_constructs.local.deploy.assets import AssetError
from tests.fixtures.example_app import Synthesized

STACK = "HeteroTrainingExample"


def _manifest(outdir: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((outdir / f"{STACK}.assets.json").read_text())
    return manifest


def _source_of(outdir: Path, key: str) -> Path:
    """The file in cdk.out that the asset manifest publishes to ``key``."""
    for entry in _manifest(outdir)["files"].values():
        if any(d["objectKey"] == key for d in entry["destinations"].values()):
            return outdir / entry["source"]["path"]
    raise AssertionError(f"no asset publishes {key}")


def _s3_object(uri: str) -> bytes:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    body: bytes = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    return body


def test_the_requests_code_bundle_is_the_synthesized_one(example: Synthesized) -> None:
    with LocalCloud() as cloud:
        cloud.deploy(example.template, template_dir=example.outdir)
        # A scripted end: no code runs, the request is what the test reads.
        result = cloud.run(None, outcome="Failed", failure_reason="AlgorithmError: drill")
        (request,) = result.submitted_requests
        uri = json.loads(request["HyperParameters"]["sagemaker_submit_directory"])
        assert uri == "s3://cdk-hnb659fds-assets-123456789012-us-west-2/" + uri.rsplit("/", 1)[1]
        source = _source_of(example.outdir, uri.rsplit("/", 1)[1])
        assert source.name.endswith(".tar.gz")
        assert _s3_object(uri) == source.read_bytes()


def test_a_template_file_publishes_every_asset_of_its_stack(example: Synthesized) -> None:
    with LocalCloud() as cloud:
        cloud.deploy(example.outdir / f"{STACK}.template.json")
        published = {asset.key: asset for asset in cloud.assets}
        expected = {
            destination["objectKey"]
            for entry in _manifest(example.outdir)["files"].values()
            for destination in entry["destinations"].values()
        }
        assert set(published) == expected  # the code bundle, the Lambda code, the template
        for key, asset in published.items():
            assert asset.bucket == "cdk-hnb659fds-assets-123456789012-us-west-2"
            body = _s3_object(asset.uri)
            source = _source_of(example.outdir, key)
            if source.is_dir():  # packaging zip: the directory, zipped
                with zipfile.ZipFile(io.BytesIO(body)) as archive:
                    names = set(archive.namelist())
                    files = {p.relative_to(source).as_posix() for p in source.rglob("*")}
                    assert names == {n for n in files if (source / n).is_file()}
                    assert archive.read("submit.py") == (source / "submit.py").read_bytes()
            else:
                assert body == source.read_bytes()
        # The Lambda functions still run from their folders in cdk.out.
        assert all(function.code_dir is not None for function in cloud.lambdas.functions.values())


def _without_the_code_bundle(example: Synthesized, tmp_path: Path) -> tuple[Path, Path]:
    outdir = tmp_path / "cdk.out"
    shutil.copytree(example.outdir, outdir)
    bundle = next(outdir.glob("asset.*.tar.gz"))
    bundle.unlink()
    return outdir, bundle


def test_a_missing_asset_file_is_named_and_nothing_is_published(
    example: Synthesized, tmp_path: Path
) -> None:
    outdir, bundle = _without_the_code_bundle(example, tmp_path)
    with LocalCloud() as cloud:
        with pytest.raises(AssetError) as raised:
            cloud.deploy(outdir / f"{STACK}.template.json")
        message = str(raised.value)
        assert str(bundle) in message and "does not exist" in message
        assert "Fix: synthesize again" in message
        assert boto3.client("s3").list_buckets()["Buckets"] == []
        assert cloud.state_machines == []


def test_the_command_line_names_the_missing_asset(
    example: Synthesized, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outdir, bundle = _without_the_code_bundle(example, tmp_path)
    code = main(["run", "--local", str(outdir / f"{STACK}.template.json")])
    err = capsys.readouterr().err
    assert code == 1
    assert bundle.name in err and "Traceback" not in err, err


def test_a_served_account_holds_the_assets_of_its_stacks(example: Synthesized) -> None:
    from hetero_constructs.local.account import LocalAccount

    template = example.outdir / f"{STACK}.template.json"
    with LocalAccount([template], port=0) as account:
        bundle = next(example.outdir.glob("asset.*.tar.gz"))
        key = bundle.name.removeprefix("asset.").removesuffix(".tar.gz") + ".gz"
        bucket = f"cdk-hnb659fds-assets-123456789012-{account.region}"
        assert _s3_object(f"s3://{bucket}/{key}") == bundle.read_bytes()
