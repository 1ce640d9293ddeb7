"""The commit-msg hook (.githooks/commit-msg) holds CONTRIBUTING.md's commit convention."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[1] / ".githooks" / "commit-msg"


def verdict(message: str, tmp_path: Path) -> tuple[int, str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message)
    result = subprocess.run(
        [sys.executable, str(HOOK), str(path)], capture_output=True, text=True, check=False
    )
    return result.returncode, result.stderr


@pytest.mark.parametrize(
    "message",
    [
        "fix(submit): keep the slot's job on a retried invocation\n\nWhy it matters.\n",
        "docs: move the reliability table to docs/reliability.md\n",
        "feat(constructs)!: props are keyword-only\n\nBreaking: ...\n",
        "refactor(spec/file): one reader\n# Please enter the commit message\n",
        "Merge branch 'main' into wip/i22d\n",
        "fixup! docs: a typo\n",
        "test: " + "x" * 66 + "\n",  # exactly 72
    ],
)
def test_conventional_messages_pass(message: str, tmp_path: Path) -> None:
    assert verdict(message, tmp_path) == (0, "")


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ("Submit: a retry no longer starts a second job\n", "not 'type(scope): subject'"),
        ("feature(cli): a new flag\n", "not 'type(scope): subject'"),
        ("fix(CLI): capital scope\n", "not 'type(scope): subject'"),
        ("fix:no space\n", "not 'type(scope): subject'"),
        ("test: " + "x" * 67 + "\n", "73 characters; at most 72"),
        ("docs: a subject with a period.\n", "ends with a period"),
        ("fix(cli): a subject\nand the body right under it\n", "second line is not blank"),
        ("# only a comment\n\n", "empty"),
    ],
)
def test_other_messages_are_refused_with_the_reason(
    message: str, problem: str, tmp_path: Path
) -> None:
    code, stderr = verdict(message, tmp_path)
    assert code == 1
    assert problem in stderr
    assert "CONTRIBUTING.md" in stderr


def test_make_setup_turns_the_hooks_on(tmp_path: Path) -> None:
    """`make setup`'s `hooks` step: a fresh clone then refuses a subject over 72 characters."""
    root = HOOK.parents[1]
    clone = tmp_path / "clone"
    (clone / ".githooks").mkdir(parents=True)
    (clone / "Makefile").write_text((root / "Makefile").read_text())
    hook = clone / ".githooks" / "commit-msg"
    hook.write_text(HOOK.read_text().replace("#!/usr/bin/env python3", f"#!{sys.executable}", 1))
    hook.chmod(0o755)
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run(["make", "-C", str(clone), "-s", "hooks"], check=True)
    configured = subprocess.run(
        [*git, "config", "core.hooksPath"], capture_output=True, text=True, check=True
    )
    assert configured.stdout.strip() == ".githooks"
    refused = subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "test: " + "x" * 67],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0
    assert "at most 72" in refused.stderr
    accepted = subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "test: a short subject"], check=False
    )
    assert accepted.returncode == 0
