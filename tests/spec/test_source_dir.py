"""A source_dir whose contents cannot be packaged gives FW-SOURCE-DIR violations, never a hang.

Dangling links, link loops, links into their own ancestors, FIFOs, sockets and devices: the
scan reports them without opening anything (opening a FIFO would block until a writer comes).
"""

from __future__ import annotations

import io
import json
import os
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.spec.source_tree import scan
from hetero_constructs.spec.violations import Violation
from tests.fixtures.blocking import finishes
from tests.fixtures.specs import spec_dict, violations_of


@pytest.fixture
def code(tmp_path: Path) -> Path:
    root = tmp_path / "code"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("print('train')\n")
    (root / "pkg" / "util.py").write_text("X = 1\n")
    return root


@pytest.fixture
def unix_socket(code: Path) -> Iterator[Path]:
    path = code / "pkg" / "control.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    yield path
    server.close()


def source_violations(code: Path) -> list[Violation]:
    data = spec_dict({"source_dir": str(code)})
    return [v for v in finishes(lambda: violations_of(data)) if v.rule == "FW-SOURCE-DIR"]


def test_a_clean_directory_with_links_is_fine(code: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "lib.py").write_text("Y = 2\n")
    (code / "lib").symlink_to(shared)  # a directory outside, as the SDK follows it
    (code / "alias.py").symlink_to(code / "train.py")
    assert source_violations(code) == []
    names = [name for name, _ in scan(code).files]
    assert names == ["alias.py", "lib/lib.py", "pkg/util.py", "train.py"]


@pytest.mark.parametrize(
    ("make", "name", "what"),
    [
        (lambda c: (c / "gone.py").symlink_to(c / "missing.py"), "gone.py", "a dangling symbolic"),
        (
            lambda c: ((c / "a").symlink_to(c / "b"), (c / "b").symlink_to(c / "a")),
            "a",
            "a symbolic link loop",
        ),
        (lambda c: (c / "self").symlink_to("self"), "self", "a symbolic link loop"),
        (
            lambda c: (c / "pkg" / "up").symlink_to(".."),
            "pkg/up",
            "a symbolic link to a directory that contains it",
        ),
        (
            lambda c: (c / "root").symlink_to("/"),
            "root",
            "a symbolic link to a directory that contains it",
        ),
        (lambda c: os.mkfifo(c / "pkg" / "pipe"), "pkg/pipe", "a FIFO"),
        (
            lambda c: ((c / "fifo-link").symlink_to(c / "pipe"), os.mkfifo(c / "pipe")),
            "fifo-link",
            "a FIFO",
        ),
    ],
    ids=["dangling", "loop", "self-loop", "parent", "filesystem root", "fifo", "link to fifo"],
)
def test_entries_that_cannot_be_packaged(
    code: Path, make: Callable[[Path], Any], name: str, what: str
) -> None:
    make(code)
    violations = source_violations(code)
    assert name in {v.value for v in violations}, violations
    violation = next(v for v in violations if v.value == name)
    assert what in violation.problem
    assert violation.path == "source_dir"


def test_directory_links_that_lead_back_to_each_other_end(code: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "to-second").symlink_to(second)
    (second / "to-first").symlink_to(first)
    (code / "first").symlink_to(first)
    violations = source_violations(code)
    assert [v.value for v in violations] == ["first/to-second/to-first"]


def test_sockets_are_reported(code: Path, unix_socket: Path) -> None:
    assert [v.value for v in source_violations(code)] == ["pkg/control.sock"]
    assert "a socket" in source_violations(code)[0].problem


def test_devices_are_reported(code: Path) -> None:
    try:
        os.mknod(code / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device needs CAP_MKNOD")
    assert "a character device" in source_violations(code)[0].problem


def test_caches_are_skipped_whatever_they_hold(code: Path) -> None:
    (code / "__pycache__").mkdir()
    os.mkfifo(code / "__pycache__" / "pipe")
    assert source_violations(code) == []


def test_many_problems_are_counted_not_listed(code: Path) -> None:
    for index in range(25):
        (code / f"gone-{index:02}").symlink_to(code / "missing")
    violations = source_violations(code)
    assert len(violations) == 11
    assert violations[-1].problem.startswith("... and 15 more entries")


def test_a_source_dir_that_is_a_fifo_or_a_file(code: Path) -> None:
    os.mkfifo(code / "fifo")
    for target in (code / "fifo", code / "train.py"):
        violations = source_violations(target)
        assert [v.problem for v in violations] == ["source_dir is not a directory."]


def test_the_cli_reports_them_without_a_traceback(code: Path, tmp_path: Path) -> None:
    from hetero_constructs.cli import main  # the CLI's own dependencies stay out of the module

    os.mkfifo(code / "pipe")
    (code / "gone").symlink_to(code / "missing")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(spec_dict({"source_dir": str(code)})))
    out = io.StringIO()
    assert finishes(lambda: main(["plan", str(spec), "--json"], out=out)) == 1
    reported = json.loads(out.getvalue())["violations"]
    assert [(v["rule"], v["path"]) for v in reported] == [("FW-SOURCE-DIR", "source_dir")] * 2
