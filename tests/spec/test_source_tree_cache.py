"""The source directory's problems, kept for a clean tree: what a fresh scan would say, always."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.spec import source_tree
from hetero_constructs.spec.source_tree import RACY_SECONDS, problems, scan


def age(*directories: Path) -> None:
    past = time.time() - 10 * RACY_SECONDS
    for directory in directories:
        os.utime(directory, (past, past))


@pytest.fixture
def clean_tree(tmp_path: Path) -> Path:
    root = tmp_path / "code"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "train.py").write_text("print('train')\n")
    (root / "pkg" / "util.py").write_text("X = 1\n")
    (root / "pkg" / "deep" / "more.py").write_text("Y = 2\n")
    age(root, root / "pkg", root / "pkg" / "deep")
    return root


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories os.scandir lists from now on."""
    listed: list[str] = []
    real = os.scandir

    def counting(path: Any) -> Any:
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(source_tree.os, "scandir", counting)
    return listed


def test_a_clean_settled_tree_is_answered_by_one_stat_per_directory(
    clean_tree: Path, listings: list[str]
) -> None:
    assert problems(clean_tree) == ()
    assert len(listings) == 3
    assert problems(clean_tree) == ()
    assert len(listings) == 3  # nothing listed again


def root_info(root: Path, given: bool) -> os.stat_result | None:
    """The root's stat as a rule passes it (taken in the same validation), or none."""
    return os.stat(root) if given else None


@pytest.mark.parametrize("given", [False, True], ids=["stat here", "root stat given"])
@pytest.mark.parametrize("where", [".", "pkg", "pkg/deep"])
@pytest.mark.parametrize("change", ["fifo", "dangling link", "file replaced by a fifo"])
def test_any_change_at_any_depth_is_seen(
    clean_tree: Path, where: str, change: str, given: bool
) -> None:
    assert problems(clean_tree, root_info(clean_tree, given)) == ()
    directory = clean_tree / where
    if change == "fifo":
        os.mkfifo(directory / "pipe")
    elif change == "dangling link":
        (directory / "gone.py").symlink_to(directory / "nowhere.py")
    else:
        victim = next(p for p in directory.iterdir() if p.is_file())
        victim.unlink()
        os.mkfifo(victim)
    assert problems(clean_tree, root_info(clean_tree, given)) == scan(clean_tree).problems != ()


def test_a_directory_replaced_by_another_is_seen(clean_tree: Path) -> None:
    assert problems(clean_tree) == ()
    (clean_tree / "pkg").rename(clean_tree.parent / "old-pkg")
    (clean_tree / "pkg").mkdir()
    os.mkfifo(clean_tree / "pkg" / "pipe")
    age(clean_tree, clean_tree / "pkg")  # the same times as before: the identity still differs
    assert [p.relative for p in problems(clean_tree)] == ["pkg/pipe"]


def test_a_recent_tree_is_not_kept(tmp_path: Path, listings: list[str]) -> None:
    (tmp_path / "train.py").write_text("print('train')\n")
    assert problems(tmp_path) == problems(tmp_path) == ()
    assert len(listings) == 2


def test_a_tree_with_links_is_not_kept(clean_tree: Path, listings: list[str]) -> None:
    outside = clean_tree.parent / "outside.py"
    outside.write_text("Z = 3\n")
    (clean_tree / "pkg" / "link.py").symlink_to(outside)
    age(clean_tree / "pkg")
    assert problems(clean_tree) == ()
    outside.unlink()
    os.mkfifo(outside)  # the link's target changed; no directory of the tree did
    assert [p.relative for p in problems(clean_tree)] == ["pkg/link.py"]
