"""Files of this machine put into the local account's S3 before a run.

On AWS a job's channels and output path name buckets that already exist in the account, with
the data set uploaded (``aws s3 cp --recursive data/ s3://bucket/datasets/train/``). A local
account starts empty, so ``hetero-train run --local --upload SOURCE=S3_URI`` does the same
there first: a file goes to the URI's key (or under it when the URI ends with ``/``), a folder's
files under the URI's prefix by their paths in it. A missing bucket is created, as the user's
own bucket exists in their account.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hetero_constructs.local.deploy.assets import Uploader, s3_uploader

_FORM = "SOURCE=s3://BUCKET/PREFIX, e.g. data/train=s3://my-bucket/datasets/train/"


@dataclass(frozen=True)
class Upload:
    """One ``SOURCE=S3_URI``: a file or folder of this machine and where it goes."""

    source: Path
    bucket: str
    key: str

    @classmethod
    def parse(cls, text: str) -> Upload:
        """``SOURCE=s3://bucket/prefix``; ``ValueError`` says what is wrong and the form."""
        source, separator, uri = text.rpartition("=")
        if not separator or not source:
            raise ValueError(f"{text!r} is not {_FORM}")
        if not uri.startswith("s3://") or not uri[5:].split("/", 1)[0]:
            raise ValueError(f"{text!r}: {uri!r} is not an s3://BUCKET/PREFIX URI ({_FORM})")
        path = Path(source).expanduser()
        if not path.exists():
            raise ValueError(f"{text!r}: {source!r} does not exist on this machine ({_FORM})")
        bucket, _, key = uri[5:].partition("/")
        return cls(path, bucket, key)

    def objects(self) -> list[tuple[str, Path]]:
        """Each (key, file) this upload puts, in key order."""
        if self.source.is_file():
            key = (
                self.key + self.source.name if self.key.endswith("/") or not self.key else self.key
            )
            return [(key, self.source)]
        prefix = self.key.rstrip("/") + "/" if self.key.rstrip("/") else ""
        files = sorted(path for path in self.source.rglob("*") if path.is_file())
        return [(prefix + path.relative_to(self.source).as_posix(), path) for path in files]

    def put(self, region: str, upload: Uploader | None = None) -> list[str]:
        """Put every file (inside ``mock_aws``: into the local account); the URIs written."""
        put = upload or s3_uploader()
        written = []
        for key, path in self.objects():
            put(region, self.bucket, key, path.read_bytes())
            written.append(f"s3://{self.bucket}/{key}")
        return written


__all__ = ["Upload"]
