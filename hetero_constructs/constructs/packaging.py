"""Byte-for-byte deterministic packages: the training code tarball and the Lambda folder.

The same inputs always give the same bytes, so asset hashes (and template snapshots) change only
when the code does.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from hetero_constructs.checks.rules.framework import source_dir as source_dir_rule
from hetero_constructs.checks.rules.framework import source_tree_findings
from hetero_constructs.spec.source_tree import read_regular_file, scan
from hetero_constructs.spec.violations import SpecValidationError, Violation

CACHE_ROOT = Path(tempfile.gettempdir()) / "hetero-constructs"


def _files(root: Path) -> list[tuple[str, Path]]:
    """Every file under ``root`` (symlinks followed, as the SDK does), sorted, caches skipped.

    Raises ``SpecValidationError`` (FW-SOURCE-DIR) when an entry cannot be packaged: a dangling
    link, a link loop, a FIFO, socket or device (never opened, so the synth never blocks).
    """
    tree = scan(root)
    if tree.problems:
        findings = source_tree_findings(root)
        raise SpecValidationError(
            Violation(source_dir_rule.id, f.path, f.problem, f.value, f.allowed, f.fix)
            for f in findings
        )
    return list(tree.files)


def _entries(sources: Mapping[str, Path]) -> list[tuple[str, Path]]:
    """(archive name, file) pairs: each source directory's contents under its archive prefix."""
    entries: list[tuple[str, Path]] = []
    for prefix, root in sources.items():
        if root.is_file():
            entries.append((prefix, root))
            continue
        for relative, path in _files(root):
            entries.append((f"{prefix}/{relative}" if prefix else relative, path))
    names = [name for name, _ in entries]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(
            f"Two sources put the same files in the bundle: {duplicates[:5]}. "
            "Allowed: each archive name once. Fix: remove one of the copies."
        )
    return sorted(entries)


def _read(path: Path) -> bytes:
    """A file's bytes; a file that turned into something else since the scan is a violation."""
    try:
        return read_regular_file(path)
    except OSError as error:
        raise SpecValidationError(
            [
                Violation(
                    source_dir_rule.id,
                    "source_dir",
                    f"'{path}' cannot be read: {error.strerror}.",
                    str(path),
                    "regular, readable files",
                    "fix or remove the file",
                )
            ]
        ) from None


def _directories(names: Iterable[str]) -> list[str]:
    parents = {str(Path(name).parent) for name in names}
    result: set[str] = set()
    for parent in parents:
        while parent not in ("", "."):
            result.add(parent)
            parent = str(Path(parent).parent)
    return sorted(result)


def _info(
    name: str, *, size: int = 0, executable: bool = False, directory: bool = False
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if directory:
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
    else:
        info.mode = 0o755 if executable else 0o644
    return info


def tar_gz_bytes(sources: Mapping[str, Path]) -> bytes:
    """A gzip tar of the sources; ``{"": dir}`` puts a directory's contents at the archive root.

    Entries are sorted, with fixed mtimes, owners and modes, and the gzip header carries no
    time or file name, so the bytes depend only on names and contents.
    """
    entries = _entries(sources)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for directory in _directories(name for name, _ in entries):
            archive.addfile(_info(directory, directory=True))
        for name, path in entries:
            data = _read(path)
            executable = bool(path.stat().st_mode & stat.S_IXUSR)
            archive.addfile(_info(name, size=len(data), executable=executable), io.BytesIO(data))
    compressed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, mtime=0) as gz:
        gz.write(raw.getvalue())
    return compressed.getvalue()


def write_cached(data: bytes, file_name: str) -> Path:
    """Write ``data`` once under a content-addressed cache folder and return the file."""
    digest = hashlib.sha256(data).hexdigest()
    target = CACHE_ROOT / digest[:32] / file_name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(data)
        partial.replace(target)
    return target


_BUNDLES: dict[tuple[tuple[str, str, int, int], ...], Path] = {}


def source_bundle(source_dir: Path | None, extra: Mapping[str, Path] | None = None) -> Path:
    """``sourcedir.tar.gz`` for the toolkit: ``source_dir``'s contents at the root, plus extras.

    Within a process the bundle is built once per set of files (names, sizes, mtimes), so a
    stack of many jobs sharing one code folder packages it once.
    """
    sources: dict[str, Path] = {"": source_dir} if source_dir is not None else {}
    sources.update(extra or {})
    fingerprint = tuple(
        (name, str(path), stat.st_size, stat.st_mtime_ns)
        for name, path in _entries(sources)
        for stat in [path.stat()]
    )
    bundle = _BUNDLES.get(fingerprint)
    if bundle is None or not bundle.exists():
        bundle = _BUNDLES[fingerprint] = write_cached(tar_gz_bytes(sources), "sourcedir.tar.gz")
    return bundle


def staged_directory(sources: Mapping[str, Path], label: str) -> Path:
    """A folder holding the sources under their names, content-addressed like ``write_cached``."""
    entries = _entries(sources)
    digest = hashlib.sha256()
    for name, path in entries:
        digest.update(name.encode() + b"\0" + _read(path) + b"\0")
    target = CACHE_ROOT / f"{label}-{digest.hexdigest()[:32]}"
    if not target.exists():
        CACHE_ROOT.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=CACHE_ROOT))
        for name, path in entries:
            destination = partial / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
        try:
            partial.replace(target)
        except OSError:  # another process staged the same content first
            shutil.rmtree(partial, ignore_errors=True)
    return target


__all__ = [
    "CACHE_ROOT",
    "source_bundle",
    "staged_directory",
    "tar_gz_bytes",
    "write_cached",
]
