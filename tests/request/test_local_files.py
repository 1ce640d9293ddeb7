"""Local source files as the rules see them: exactly what os.path says, at one stat per plan."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.checks.registry import rule_by_id
from hetero_constructs.planning import plan
from hetero_constructs.request.context import RuleContext
from hetero_constructs.spec._directory_memo import LISTINGS
from hetero_constructs.spec.file.reader import load_spec_file
from hetero_constructs.spec.source_tree import RACY_SECONDS

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "examples" / "specs" / "hetero_torch_distributed.json"
)


def fresh_context() -> RuleContext:
    return RuleContext(load_spec_file(EXAMPLE))


def age(directory: Path) -> None:
    """Make the directory's last change older than the racy window."""
    past = time.time() - 10 * RACY_SECONDS
    os.utime(directory, (past, past))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "train.py").write_text("print('train')\n")
    (tmp_path / "pkg" / "util.py").write_text("X = 1\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "train.py")
    (tmp_path / "dir-link").symlink_to(tmp_path / "pkg")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "gone.py")
    os.mkfifo(tmp_path / "pipe")
    age(tmp_path)
    age(tmp_path / "pkg")
    return tmp_path


def test_answers_are_those_of_os_path(tree: Path) -> None:
    names = [
        "train.py", "pkg", "pkg/util.py", "pkg/missing.py", "link.py", "dir-link",
        "dir-link/util.py", "dangling.py", "pipe", "missing", "missing/x.py", "train.py/",
        "pkg/", ".", "..", "pkg/..", "train.py/x",
    ]  # fmt: skip
    for _ in range(2):  # listings read, then kept
        context = fresh_context()
        for name in names:
            path = os.path.join(tree, name)
            assert context.is_file(path) == os.path.isfile(path), name
            assert context.is_dir(path) == os.path.isdir(path), name
            for directory in (str(tree), f"{tree}/", f"{tree}/pkg", f"{tree}/train.py", ""):
                joined = os.path.join(directory, name)
                assert context.holds_file(directory, name) == os.path.isfile(joined), joined
    assert not fresh_context().is_file("bad\0path") and not fresh_context().is_dir("bad\0path")


def test_a_change_to_the_directory_is_seen_by_the_next_plan(tree: Path) -> None:
    entry = str(tree / "later.py")
    assert not fresh_context().is_file(entry)
    assert str(tree) in LISTINGS  # kept: the directory is not racy
    (tree / "later.py").write_text("print('later')\n")
    assert fresh_context().is_file(entry)
    (tree / "later.py").unlink()
    assert not fresh_context().is_file(entry)


def test_a_racy_listing_is_not_kept(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print('train')\n")
    assert fresh_context().is_file(str(tmp_path / "train.py"))
    assert str(tmp_path) not in LISTINGS


def test_a_validation_is_one_snapshot(tree: Path) -> None:
    context = fresh_context()
    assert context.is_file(str(tree / "train.py"))
    (tree / "train.py").unlink()
    assert context.is_file(str(tree / "train.py"))  # the same plan
    assert not fresh_context().is_file(str(tree / "train.py"))


def test_the_rules_asking_about_local_files_stat_the_source_dir_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """FW-ENTRY-POINT, FW-SOURCE-DIR (its kept clean tree included) and
    LAU-TORCH-DISTRIBUTED-ENTRY-POINT share one stat of source_dir (they called os.stat on it
    four times between them)."""
    spec = load_spec_file(EXAMPLE)
    assert spec.source_dir is not None
    assert plan(spec).ok  # the listing of source_dir is read and kept
    calls: list[Any] = []
    real_stat = os.stat

    def counting_stat(*args: Any, **kwargs: Any) -> os.stat_result:
        calls.append(args[0])
        return real_stat(*args, **kwargs)

    monkeypatch.setattr(os, "stat", counting_stat)
    context = RuleContext(spec)
    for rule_id in ("FW-ENTRY-POINT", "FW-SOURCE-DIR", "LAU-TORCH-DISTRIBUTED-ENTRY-POINT"):
        assert list(rule_by_id(rule_id).check(context)) == []
    assert context.is_dir(spec.source_dir)
    assert calls == [spec.source_dir]
