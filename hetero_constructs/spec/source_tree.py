"""The files of a ``source_dir``, found without ever blocking or recursing forever.

Symbolic links are followed, as the SDK does when it packages the code, but a link that
dangles, a chain of links that loops, and a directory link back into its own ancestors are
reported instead of followed. FIFOs, sockets and devices are reported and never opened (opening
a FIFO blocks until something writes to it). The rule FW-SOURCE-DIR reports these problems, and
the packaging refuses to build a bundle that has any.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from hetero_constructs.spec._directory_memo import CLEAN_TREES, RACY_SECONDS

SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class SourceProblem:
    """An entry of the source directory that cannot be packaged."""

    relative: str  # the entry's path under the source directory
    what: str  # e.g. "a dangling symbolic link"


@dataclass(frozen=True)
class SourceTree:
    """The regular files (archive name, path), sorted, and the entries that cannot be packaged."""

    files: tuple[tuple[str, Path], ...]
    problems: tuple[SourceProblem, ...]


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _special(mode: int) -> str:
    for test, what in _SPECIAL:
        if test(mode):
            return what
    return "not a regular file or directory"


def _inside(directory: str, ancestors: tuple[str, ...]) -> bool:
    """Whether ``directory`` is one of ``ancestors`` or contains one of them."""
    base = directory.rstrip(os.sep) + os.sep
    return any(a == directory or a.startswith(base) for a in ancestors)


def problems(
    root: str | os.PathLike[str], root_info: os.stat_result | None = None
) -> tuple[SourceProblem, ...]:
    """The entries under ``root`` that cannot be packaged (``scan(root).problems``).

    ``root_info`` is ``os.stat(root)`` when the caller has just taken it for the same check
    (a rule's validation is one snapshot of the file system): the root is then not stat again.
    """
    key = os.fspath(root)
    if CLEAN_TREES.still_clean(key, root_info):
        return ()
    directories: list[tuple[str, os.stat_result]] = []
    tree = _walk(Path(root), directories)
    if not tree.problems:  # a tree with a link lists no directories: not kept
        CLEAN_TREES.keep(key, directories)
    return tree.problems


def scan(root: Path) -> SourceTree:
    """Every regular file under ``root`` (caches skipped) and every entry that is a problem."""
    return _walk(root, None)


def _walk(root: Path, directories: list[tuple[str, os.stat_result]] | None) -> SourceTree:
    """``scan``; when ``directories`` is given, each directory listed with its stat taken
    before its listing, and the list emptied if a symbolic link is met."""
    files: list[tuple[str, Path]] = []
    problems: list[SourceProblem] = []
    try:
        root_info = os.stat(root)
    except OSError as error:
        return SourceTree((), (SourceProblem(".", f"not readable ({error.strerror})"),))
    if not stat.S_ISDIR(root_info.st_mode):
        return SourceTree((), (SourceProblem(".", "not a directory"),))
    # (directory, its name in the archive, real paths of the directories that lead to it;
    # computed only once a directory link needs them, as most trees have none)
    pending: list[tuple[Path, str, tuple[str, ...] | None]] = [(root, "", None)]
    while pending:
        directory, prefix, ancestors = pending.pop()
        if directories is not None:
            try:
                directories.append((os.fspath(directory), os.stat(directory)))
            except OSError:
                directories.clear()
                directories = None  # not kept: the listing below reports what is wrong
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as error:
            problems.append(SourceProblem(prefix or ".", f"not listable ({error.strerror})"))
            continue
        subdirectories: list[tuple[Path, str, tuple[str, ...] | None]] = []
        for entry in entries:
            name = f"{prefix}/{entry.name}" if prefix else entry.name
            # Plain files and directories are known from the listing itself (no stat call).
            if not entry.is_symlink():
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS:
                        subdirectories.append((Path(entry.path), name, ancestors))
                    continue
                if entry.is_file(follow_symlinks=False):
                    if not entry.name.endswith(SKIPPED_SUFFIXES):
                        files.append((name, Path(entry.path)))
                    continue
            if directories is not None:
                directories.clear()
                directories = None  # a link or a special entry: the tree is not kept
            try:
                info = os.stat(entry.path)  # follows links
            except OSError as error:
                if error.errno == errno.ELOOP:
                    problems.append(SourceProblem(name, "a symbolic link loop"))
                elif entry.is_symlink() and error.errno == errno.ENOENT:
                    problems.append(SourceProblem(name, "a dangling symbolic link"))
                else:
                    problems.append(SourceProblem(name, f"not readable ({error.strerror})"))
                continue
            if stat.S_ISDIR(info.st_mode):  # a link to a directory
                if entry.name in SKIPPED_DIRS:
                    continue
                chain = ancestors or _real_chain(root, prefix)
                real = os.path.realpath(entry.path)
                if _inside(real, chain):
                    problems.append(
                        SourceProblem(name, "a symbolic link to a directory that contains it")
                    )
                    continue
                subdirectories.append((Path(entry.path), name, (*chain, real)))
            elif stat.S_ISREG(info.st_mode):
                if not entry.name.endswith(SKIPPED_SUFFIXES):
                    files.append((name, Path(entry.path)))
            else:
                problems.append(SourceProblem(name, _special(info.st_mode)))
        pending.extend(reversed(subdirectories))
    return SourceTree(tuple(sorted(files)), tuple(problems))


def _real_chain(root: Path, prefix: str) -> tuple[str, ...]:
    """Real paths of ``root`` and of each directory down to ``root/prefix`` (no links on it)."""
    chain = [os.path.realpath(root)]
    for part in prefix.split("/") if prefix else ():
        chain.append(os.path.join(chain[-1], part))
    return tuple(chain)


class NotARegularFileError(OSError):
    """A path that was a regular file when scanned is not one when read."""


def read_regular_file(path: Path) -> bytes:
    """The bytes of a regular file; never blocks on a FIFO that replaced it since the scan."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise NotARegularFileError(errno.EINVAL, "not a regular file", str(path))
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            return stream.read()
    finally:
        os.close(descriptor)


__all__ = [
    "RACY_SECONDS",
    "SKIPPED_DIRS",
    "SKIPPED_SUFFIXES",
    "NotARegularFileError",
    "SourceProblem",
    "SourceTree",
    "problems",
    "read_regular_file",
    "scan",
]
