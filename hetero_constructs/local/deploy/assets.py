"""Publishing a cloud assembly's file assets into the local account's S3, as ``cdk deploy`` does.

Before CloudFormation sees a template, ``cdk deploy`` publishes its stack's assets: it reads the
asset manifest (``cdk.out/<Stack>.assets.json``, the stack artifact's ``cdk:asset-manifest``
dependency in ``manifest.json``) and uploads each file asset to every destination, a bucket and
an object key in which ``${AWS::AccountId}``, ``${AWS::Region}`` and ``${AWS::Partition}`` stand
for the target environment's. ``packaging: file`` uploads the file as it is; ``packaging: zip``
uploads a directory zipped (a file that is already a zip archive as it is). The destination
bucket is the bootstrap stack's (``cdk-hnb659fds-assets-ACCOUNT-REGION`` by default); locally it
is created when missing, as if the environment were bootstrapped.

So a job's code bundle (``sagemaker_submit_directory``), a Lambda's ``Code.S3Key`` and anything
else a template points at in the asset bucket are in the local account's S3, byte for byte the
files in ``cdk.out``. Docker image assets and assets built by a command (``executable``) are not
published: there is no registry and no build locally (each is named in the notes).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The CDK's fixed date for the entries of zipped assets (their bytes do not depend on mtimes).
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_PLACEHOLDER = re.compile(r"\$\{AWS::(AccountId|Region|Partition)\}")


class AssetError(Exception):
    """A cloud assembly's asset cannot be published (the message names it and says the fix)."""


@dataclass(frozen=True)
class FileAsset:
    """One destination of one file asset of an asset manifest."""

    asset_id: str
    display_name: str
    source: Path
    packaging: str
    bucket: str
    key: str
    region: str | None

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


@dataclass(frozen=True)
class Environment:
    """Where the assets go: the local account, its region and partition."""

    account: str
    region: str
    partition: str

    def substitute(self, text: str, region: str | None = None) -> str:
        values = {
            "AccountId": self.account,
            "Region": region or self.region,
            "Partition": self.partition,
        }
        return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)


def stack_manifests(template: Path) -> list[Path]:
    """The asset manifests of the stack synthesized as ``template`` (in ``cdk.out``).

    ``manifest.json`` names them (the stack artifact's ``cdk:asset-manifest`` dependencies);
    without it, ``<Stack>.assets.json`` next to the template.
    """
    assembly = template.parent
    manifest = assembly / "manifest.json"
    if manifest.is_file():
        try:
            artifacts: dict[str, Any] = json.loads(manifest.read_text()).get("artifacts", {})
        except ValueError as error:
            raise AssetError(
                f"{manifest} is not JSON ({error}). Fix: synthesize again (`cdk synth`)."
            ) from None
        for artifact in artifacts.values():
            properties = artifact.get("properties") or {}
            if properties.get("templateFile") != template.name:
                continue
            files = [
                assembly / str(artifacts[name]["properties"]["file"])
                for name in artifact.get("dependencies") or []
                if (artifacts.get(name) or {}).get("type") == "cdk:asset-manifest"
            ]
            if files:
                return files
    default = assembly / f"{template.name.split('.')[0]}.assets.json"
    return [default] if default.is_file() else []


def file_assets(manifest: Path, environment: Environment) -> tuple[list[FileAsset], list[str]]:
    """Every destination of every file asset in ``manifest``, and notes on what is not published
    (image assets, assets a command builds)."""
    try:
        body: dict[str, Any] = json.loads(manifest.read_text())
    except FileNotFoundError:
        raise AssetError(
            f"the asset manifest {manifest} does not exist. Fix: synthesize again (`cdk synth`) "
            "and deploy the template from that cdk.out."
        ) from None
    except ValueError as error:
        raise AssetError(
            f"the asset manifest {manifest} is not JSON ({error}). Fix: synthesize again."
        ) from None
    assets: list[FileAsset] = []
    notes: list[str] = []
    for asset_id, entry in sorted((body.get("files") or {}).items()):
        source = entry.get("source") or {}
        name = str(entry.get("displayName") or asset_id)
        if "path" not in source:
            notes.append(
                f"asset {name}: built by a command (executable), not published locally; "
                "what the template reads from it is missing from the local S3"
            )
            continue
        for destination in (entry.get("destinations") or {}).values():
            region = destination.get("region")
            region = environment.substitute(str(region)) if region else None
            assets.append(
                FileAsset(
                    asset_id=asset_id,
                    display_name=name,
                    source=manifest.parent / str(source["path"]),
                    packaging=str(source.get("packaging") or "file"),
                    bucket=environment.substitute(str(destination["bucketName"]), region),
                    key=environment.substitute(str(destination["objectKey"]), region),
                    region=region,
                )
            )
    for asset_id, entry in sorted((body.get("dockerImages") or {}).items()):
        name = str(entry.get("displayName") or asset_id)
        notes.append(f"image asset {name}: not built or pushed locally (no container registry)")
    return assets, notes


def referenced_assets(
    assembly: Path, template: dict[str, Any], environment: Environment
) -> tuple[list[FileAsset], list[str]]:
    """For a template given as a dict (no stack name): the file assets of ``assembly``'s
    manifests whose object keys the template names."""
    text = json.dumps(template)
    assets: list[FileAsset] = []
    notes: list[str] = []
    for manifest in sorted(assembly.glob("*.assets.json")):
        found, skipped = file_assets(manifest, environment)
        assets.extend(asset for asset in found if asset.key in text)
        notes.extend(note for note in skipped if note not in notes)
    unique = {(asset.bucket, asset.key): asset for asset in assets}
    return list(unique.values()), notes


def packaged(asset: FileAsset) -> bytes:
    """The bytes ``cdk deploy`` uploads for ``asset``; ``AssetError`` if its source is missing."""
    source = asset.source
    if asset.packaging == "zip":
        if source.is_dir():
            return _zip_directory(source)
        if source.is_file() and zipfile.is_zipfile(source):
            return source.read_bytes()
    elif asset.packaging == "file":
        if source.is_file():
            return source.read_bytes()
    else:
        raise AssetError(
            f"asset {asset.display_name} ({asset.asset_id}): packaging {asset.packaging!r} is "
            "not one this runner publishes ('file' or 'zip'). Fix: synthesize with a CDK "
            "version whose asset manifests it knows."
        )
    kind = "directory (or zip archive)" if asset.packaging == "zip" else "file"
    raise AssetError(
        f"asset {asset.display_name} ({asset.asset_id}): its {kind} {source} does not exist, "
        f"so it cannot be published to {asset.uri}. Fix: synthesize again (`cdk synth`) and "
        "deploy the template from that cdk.out, with its asset files next to it."
    )


def _zip_directory(folder: Path) -> bytes:
    """``folder`` zipped as the CDK zips a directory asset: every file, in path order, with a
    fixed date, its mode kept."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(folder.rglob("*")):
            if not path.is_file():
                continue
            info = zipfile.ZipInfo(path.relative_to(folder).as_posix(), date_time=_ZIP_DATE)
            info.external_attr = (os.stat(path).st_mode & 0xFFFF) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zipped.writestr(info, path.read_bytes())
    return archive.getvalue()


#: Creates a bucket when missing, then puts an object: (region, bucket, key, body).
Uploader = Callable[[str, str, str, bytes], None]


def publish(assets: list[FileAsset], region: str, upload: Uploader) -> None:
    """Upload every asset; each source is checked first, so a missing one publishes nothing."""
    bodies = [(asset, packaged(asset)) for asset in assets]
    for asset, body in bodies:
        upload(asset.region or region, asset.bucket, asset.key, body)


def s3_uploader() -> Uploader:
    """An ``Uploader`` on boto3's S3 clients (inside ``mock_aws``: the local account's): the
    bucket is created in its region when it does not exist, as a bootstrapped environment has
    it."""
    import boto3

    created: set[str] = set()

    def upload(region: str, bucket: str, key: str, body: bytes) -> None:
        client = boto3.client("s3", region_name=region)
        if bucket not in created:
            arguments: dict[str, Any] = {"Bucket": bucket}
            if region != "us-east-1":
                arguments["CreateBucketConfiguration"] = {"LocationConstraint": region}
            with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
                client.create_bucket(**arguments)
            created.add(bucket)
        client.put_object(Bucket=bucket, Key=key, Body=body)

    return upload


def publish_template_assets(
    template: dict[str, Any],
    template_path: Path | None,
    assembly: Path | None,
    environment: Environment,
    upload: Uploader | None = None,
) -> tuple[list[FileAsset], list[str]]:
    """Publish the assets of a template about to be deployed, as ``cdk deploy`` does; what was
    published and notes on what was not.

    ``template_path`` (a synthesized ``<Stack>.template.json``): every file asset of its stack.
    Else, with ``assembly`` (the ``cdk.out`` a template dict came from): the assets of that
    assembly the template names. Neither: nothing (a hand-written template has no assets).
    """
    if template_path is not None:
        assets: list[FileAsset] = []
        notes: list[str] = []
        for manifest in stack_manifests(template_path):
            found, skipped = file_assets(manifest, environment)
            assets.extend(found)
            notes.extend(skipped)
    elif assembly is not None and assembly.is_dir():
        assets, notes = referenced_assets(assembly, template, environment)
    else:
        return [], []
    publish(assets, environment.region, upload or s3_uploader())
    return assets, notes


__all__ = [
    "AssetError",
    "Environment",
    "FileAsset",
    "Uploader",
    "file_assets",
    "packaged",
    "publish",
    "publish_template_assets",
    "referenced_assets",
    "s3_uploader",
    "stack_manifests",
]
