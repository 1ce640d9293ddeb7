"""What a local job reads from and writes to the local account's S3, as SageMaker does.

- The code bundle (``sagemaker_submit_directory``, a ``sourcedir.tar.gz``) unpacked into each
  host's ``code`` folder, as the toolkit unpacks it into ``/opt/ml/code``.
- Each channel's objects under its ``S3Uri``, only to the hosts of its ``InstanceGroupNames``
  (all hosts when none): every object to each host for ``FullyReplicated``; for
  ``ShardedByS3Key`` the objects in key order dealt round-robin over those hosts (SageMaker
  gives each about 1/n of them; its exact split is not documented).
- Checkpoints: ``CheckpointConfig.S3Uri`` restored into every host's checkpoint folder before its
  script starts; new or changed files copied back while it runs and when it ends.
- At the end: every host's ``model`` folder in one ``model.tar.gz`` and every ``output/data`` in
  one ``output.tar.gz``, at ``<S3OutputPath>/<job>/output/``.

``Storage`` is how: the local account's S3 (``MotoStorage``) or a folder (``FolderStorage``).
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from hetero_constructs.local.hosts.layout import CONTAINER_BASE, Cluster, Host


class JobSetupError(Exception):
    """The job cannot start as asked (its reason is the job's ``FailureReason``)."""


class Storage(Protocol):
    """The objects of an S3-like store."""

    def keys(self, bucket: str, prefix: str) -> list[str]: ...

    def read(self, bucket: str, key: str) -> bytes | None: ...

    def write(self, bucket: str, key: str, body: bytes) -> None: ...


class MotoStorage:
    """The local account's S3: moto's backend in this process, no client (no fault hook)."""

    def __init__(self, account: str) -> None:
        self.account = account

    def _backend(self) -> Any:
        from moto.s3.models import s3_backends

        return s3_backends[self.account]["global"]

    def _bucket(self, bucket: str) -> Any:
        from moto.s3.exceptions import MissingBucket

        try:
            return self._backend().get_bucket(bucket)
        except MissingBucket:
            return None

    def keys(self, bucket: str, prefix: str) -> list[str]:
        found = self._bucket(bucket)
        if found is None:
            return []
        return sorted(str(key) for key in list(found.keys.keys()) if str(key).startswith(prefix))

    def read(self, bucket: str, key: str) -> bytes | None:
        if self._bucket(bucket) is None:
            return None
        found = self._backend().get_object(bucket, key)
        return None if found is None else bytes(found.value)

    def write(self, bucket: str, key: str, body: bytes) -> None:
        if self._bucket(bucket) is None:
            raise JobSetupError(
                f"ClientError: the output bucket {bucket!r} does not exist in the local account"
            )
        self._backend().put_object(bucket, key, body)


class FolderStorage:
    """Buckets as folders of ``root`` (``root/<bucket>/<key>``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def keys(self, bucket: str, prefix: str) -> list[str]:
        base = self.root / bucket
        if not base.is_dir():
            return []
        names = (p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
        return sorted(name for name in names if name.startswith(prefix))

    def read(self, bucket: str, key: str) -> bytes | None:
        path = self.root / bucket / key
        return path.read_bytes() if path.is_file() else None

    def write(self, bucket: str, key: str, body: bytes) -> None:
        path = self.root / bucket / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)


def parse_s3_uri(uri: str, what: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` as (bucket, prefix)."""
    if not uri.startswith("s3://") or not uri[5:].split("/", 1)[0]:
        raise JobSetupError(f"ClientError: {what} {uri!r} is not an s3://bucket/key URI")
    bucket, _, prefix = uri[5:].partition("/")
    return bucket, prefix


def submit_directory(hyperparameters: Mapping[str, str]) -> str:
    """The code bundle's URI (the hyperparameter is a JSON-encoded string)."""
    raw = hyperparameters.get("sagemaker_submit_directory")
    if raw is None:
        raise JobSetupError(
            "ClientError: the job has no sagemaker_submit_directory hyperparameter: a local run "
            "runs the job's code bundle (there is no container image to run locally); set it "
            "to the s3:// URI of a sourcedir.tar.gz holding the entry point"
        )
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return str(value)


def unpack_code(storage: Storage, uri: str, hosts: Sequence[Host]) -> None:
    """The code bundle unpacked into each host's ``code`` folder: an S3 object, or a file
    under ``/opt/ml`` (with network isolation it arrives as a channel, downloaded first)."""
    for host in hosts:
        body = _code_bundle(storage, uri, host)
        try:
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as archive:
                _extract(archive, host.base / "code")
        except (tarfile.TarError, OSError) as error:
            raise JobSetupError(
                f"ClientError: the code bundle {uri} is not a tar.gz archive ({error})"
            ) from error


def _extract(archive: tarfile.TarFile, folder: Path) -> None:
    """Python's ``data`` filter (3.11.4 on); before it (Debian 12's 3.11.2), only plain files and
    folders that land inside ``folder``."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(folder, filter="data")
        return
    root = folder.resolve()
    for member in archive.getmembers():
        target = (folder / member.name).resolve()
        if not (member.isfile() or member.isdir()) or root not in (target, *target.parents):
            raise tarfile.TarError(f"{member.name!r} is not a plain file or folder inside it")
    archive.extractall(folder)


def _code_bundle(storage: Storage, uri: str, host: Host) -> bytes:
    if uri.startswith(f"{CONTAINER_BASE}/"):
        path = host.base / uri[len(CONTAINER_BASE) + 1 :]
        if not path.is_file():
            raise JobSetupError(
                f"ClientError: the code bundle {uri} is not on {host.name}: no channel put it "
                "there (with network isolation, a 'code' channel carries the sourcedir.tar.gz)"
            )
        return path.read_bytes()
    bucket, key = parse_s3_uri(uri, "sagemaker_submit_directory")
    body = storage.read(bucket, key)
    if body is None:
        raise JobSetupError(
            f"ClientError: the code bundle {uri} is not in the local account's S3 (publish the "
            "template's assets, as `cdk deploy` does, or upload the sourcedir.tar.gz there)"
        )
    return body


def channel_hosts(channel: Mapping[str, Any], cluster: Cluster) -> list[Host]:
    """The hosts that receive ``channel``: those of its instance groups, else all."""
    source = (channel.get("DataSource") or {}).get("S3DataSource") or {}
    groups = source.get("InstanceGroupNames") or []
    if not groups:
        return list(cluster.hosts)
    return [host for host in cluster.hosts if host.group in groups]


def empty_channel(storage: Storage, channels: Sequence[Mapping[str, Any]]) -> str | None:
    """CreateTrainingJob's refusal of a channel whose S3 prefix holds no object, as the
    service words it; None when every S3 channel has data."""
    for channel in channels:
        source = (channel.get("DataSource") or {}).get("S3DataSource")
        if source is None or source.get("S3DataType", "S3Prefix") != "S3Prefix":
            continue
        uri = str(source.get("S3Uri", ""))
        try:
            bucket, prefix = parse_s3_uri(uri, "S3Uri")
        except JobSetupError:
            continue  # the job fails with the reason when it downloads
        if not storage.keys(bucket, prefix):
            return (
                f'No S3 objects found under S3 URL "{uri}" given in input data source. Please '
                "ensure that the bucket exists in the selected region, and that objects exist "
                "under that S3 prefix (in the local account: put them there, e.g. with "
                "`hetero-train run --local --upload`)"
            )
    return None


def download_channels(
    storage: Storage, channels: Sequence[Mapping[str, Any]], cluster: Cluster
) -> list[str]:
    """Each channel's objects into its hosts' ``input/data/<channel>``; notes on what differs."""
    notes: list[str] = []
    for channel in channels:
        name = str(channel["ChannelName"])
        mode = str(channel.get("InputMode") or "File")
        if mode != "File":
            notes.append(f"channel {name}: {mode} input mode runs as File locally")
        source = (channel.get("DataSource") or {}).get("S3DataSource")
        if source is None:
            notes.append(f"channel {name}: only S3 data sources are downloaded locally")
            continue
        if source.get("S3DataType", "S3Prefix") != "S3Prefix":
            raise JobSetupError(
                f"ClientError: channel {name}: S3DataType {source.get('S3DataType')} is not "
                "supported locally; use S3Prefix"
            )
        bucket, prefix = parse_s3_uri(str(source["S3Uri"]), f"channel {name}'s S3Uri")
        keys = [key for key in storage.keys(bucket, prefix) if not key.endswith("/")]
        receivers = channel_hosts(channel, cluster)
        sharded = source.get("S3DataDistributionType") == "ShardedByS3Key"
        for index, key in enumerate(keys):
            targets = [receivers[index % len(receivers)]] if sharded else receivers
            relative = key[len(prefix) :].lstrip("/") or key.rpartition("/")[2]
            body = storage.read(bucket, key) or b""
            for host in targets:
                path = host.base / "input" / "data" / name / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(body)
    return notes


def checkpoint_folder(host: Host, config: Mapping[str, Any] | None) -> Path:
    """Where ``host``'s checkpoints are on this machine (``LocalPath`` under ``/opt/ml``)."""
    local = str((config or {}).get("LocalPath") or f"{CONTAINER_BASE}/checkpoints")
    if not local.startswith(f"{CONTAINER_BASE}/"):
        raise JobSetupError(
            f"ClientError: CheckpointConfig.LocalPath {local!r} is outside {CONTAINER_BASE}; "
            f"local runs support paths under {CONTAINER_BASE}/ (default "
            f"{CONTAINER_BASE}/checkpoints)"
        )
    return host.base / local[len(CONTAINER_BASE) + 1 :]


class Checkpoints:
    """A job's ``CheckpointConfig``: restored before the start, copied back as it changes."""

    def __init__(self, storage: Storage, config: Mapping[str, Any] | None, hosts: Sequence[Host]):
        self._storage = storage
        self._config = config
        self._hosts = list(hosts)
        self._uploaded: dict[Path, tuple[int, int]] = {}
        self._target = (
            parse_s3_uri(str(config["S3Uri"]), "CheckpointConfig.S3Uri")
            if config and config.get("S3Uri")
            else None
        )

    def restore(self) -> int:
        """Every checkpoint object into every host's checkpoint folder; how many objects."""
        if self._target is None:
            return 0
        bucket, prefix = self._target
        keys = [key for key in self._storage.keys(bucket, prefix) if not key.endswith("/")]
        for host in self._hosts:
            folder = checkpoint_folder(host, self._config)
            folder.mkdir(parents=True, exist_ok=True)
            for key in keys:
                path = folder / key[len(prefix) :].lstrip("/")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(self._storage.read(bucket, key) or b"")
                stat = path.stat()
                self._uploaded[path] = (stat.st_mtime_ns, stat.st_size)
        return len(keys)

    def upload(self) -> int:
        """New or changed checkpoint files to S3; how many."""
        if self._target is None:
            return 0
        bucket, prefix = self._target
        count = 0
        for host in self._hosts:
            folder = checkpoint_folder(host, self._config)
            if not folder.is_dir():
                continue
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                try:
                    stat = path.stat()
                    if self._uploaded.get(path) == (stat.st_mtime_ns, stat.st_size):
                        continue
                    body = path.read_bytes()
                except OSError:
                    continue  # removed while we looked
                key = f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}".lstrip("/")
                self._storage.write(bucket, key, body)
                self._uploaded[path] = (stat.st_mtime_ns, stat.st_size)
                count += 1
        return count


def archive(folders: Sequence[Path]) -> bytes:
    """The files of ``folders`` in one tar.gz, each by its path in its folder."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for folder in folders:
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                tar.add(path, arcname=path.relative_to(folder).as_posix())
    return buffer.getvalue()


def upload_artifacts(storage: Storage, output_path: str, job: str, hosts: Sequence[Host]) -> str:
    """``model.tar.gz`` and ``output.tar.gz`` of every host; the model's URI."""
    bucket, prefix = parse_s3_uri(output_path, "OutputDataConfig.S3OutputPath")
    base = f"{prefix.rstrip('/')}/{job}/output".lstrip("/")
    storage.write(bucket, f"{base}/model.tar.gz", archive([h.base / "model" for h in hosts]))
    outputs = [h.base / "output" / "data" for h in hosts]
    storage.write(bucket, f"{base}/output.tar.gz", archive(outputs))
    return f"s3://{bucket}/{base}/model.tar.gz"


__all__ = [
    "Checkpoints",
    "FolderStorage",
    "JobSetupError",
    "MotoStorage",
    "Storage",
    "archive",
    "channel_hosts",
    "checkpoint_folder",
    "download_channels",
    "empty_channel",
    "parse_s3_uri",
    "submit_directory",
    "unpack_code",
    "upload_artifacts",
]
