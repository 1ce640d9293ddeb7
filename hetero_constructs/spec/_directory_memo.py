"""A speed-up kept behind this module: what a directory held, kept while it has not changed.

Rules ask on every plan whether a local ``source_dir`` holds a file and whether its tree can be
packaged; the plain path reads the file system each time. Kept here instead: a directory's
listing (``LISTINGS``), and a tree found clean (``CLEAN_TREES``), each with the identity of its
directories. Adding, removing, renaming or replacing an entry changes its directory's
modification time, so one stat per directory shows that an answer still holds. As git does
for "racily clean" files, nothing is kept until its directories have not changed for
``RACY_SECONDS``, so a change within the timestamp granularity cannot go unseen. Tests compare
every answer with the plain path's (tests/spec/test_source_tree_cache.py,
tests/request/test_local_files.py); the plans per second it buys are in docs/performance.md.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Sequence

RACY_SECONDS = 2.0
Identity = tuple[int, int, int]  # device, inode, modification time (ns)


def directory_identity(info: os.stat_result) -> Identity:
    """Device, inode and modification time (ns): changed by any entry added, removed or renamed."""
    return (info.st_dev, info.st_ino, info.st_mtime_ns)


def settled(info: os.stat_result) -> bool:
    """Unchanged for RACY_SECONDS: a later change cannot share its timestamp (git's racy rule)."""
    return time.time() - info.st_mtime > RACY_SECONDS


def _same_directory(info: os.stat_result | None, identity: Identity) -> bool:
    return info is not None and stat.S_ISDIR(info.st_mode) and directory_identity(info) == identity


def _stat(directory: str) -> os.stat_result | None:
    try:
        return os.stat(directory)  # as recorded: the root may be reached through a link
    except OSError:
        return None


class Listings:
    """The regular files of directories, each listing kept with its directory's identity."""

    def __init__(self, limit: int = 256) -> None:
        self._kept: dict[str, tuple[Identity, frozenset[str]]] = {}
        self._limit = limit

    def __contains__(self, directory: object) -> bool:
        """Whether a listing of ``directory`` is kept."""
        return directory in self._kept

    def files(
        self, directory: str, info: os.stat_result, read: Callable[[str], frozenset[str] | None]
    ) -> frozenset[str] | None:
        """``read(directory)``, or what it returned while the directory (``info``) was the same."""
        kept = self._kept.get(directory)
        if kept is not None and kept[0] == directory_identity(info):
            return kept[1]
        files = read(directory)
        if files is not None and settled(info):
            if len(self._kept) >= self._limit:
                self._kept.clear()
            self._kept[directory] = (directory_identity(info), files)
        return files


class CleanTrees:
    """Trees found to have no problem, kept with the identity of each of their directories."""

    def __init__(self, limit: int = 64) -> None:
        self._kept: dict[str, tuple[tuple[str, Identity], ...]] = {}
        self._limit = limit

    def still_clean(self, root: str, root_info: os.stat_result | None) -> bool:
        """Whether ``root`` was clean and none of its directories changed since (the root's
        stat is ``root_info`` when the caller has just taken it)."""
        kept = self._kept.get(root)
        if kept is None:
            return False
        first = root_info if root_info is not None else _stat(kept[0][0])
        if _same_directory(first, kept[0][1]) and all(
            _same_directory(_stat(directory), identity) for directory, identity in kept[1:]
        ):
            return True
        del self._kept[root]
        return False

    def keep(self, root: str, directories: Sequence[tuple[str, os.stat_result]]) -> None:
        """Keep a clean tree (its directories as walked, root first) once they all settled."""
        if directories and all(settled(info) for _, info in directories):
            if len(self._kept) >= self._limit:
                self._kept.clear()
            self._kept[root] = tuple((d, directory_identity(info)) for d, info in directories)


LISTINGS = Listings()
CLEAN_TREES = CleanTrees()

__all__ = [
    "CLEAN_TREES",
    "LISTINGS",
    "RACY_SECONDS",
    "CleanTrees",
    "Identity",
    "Listings",
    "directory_identity",
    "settled",
]
