"""The README and docs/ as a newcomer reads them: short, linked, and every link lands.

The README stays a ten-minute read (at most 250 lines, with a table of contents); everything
else lives in docs/, and each page there is reachable from the README. Every relative link of
the README, docs/, CONTRIBUTING.md and CHANGELOG.md names a file that exists and, with a
``#fragment``, a heading that file has (GitHub's anchor rules). The code blocks meant to run
are run elsewhere: tests/packaging/test_wheel.py (the README's newcomer path, from the wheel)
and tests/test_docs_examples.py (every other block meant to run).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINKED_FROM_ANYWHERE = [README, *PAGES, *(ROOT / n for n in ("CONTRIBUTING.md", "CHANGELOG.md"))]

FENCE = re.compile(r"^```.*?^```\s*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?)\s*#*\s*$", re.MULTILINE)


def prose(path: Path) -> str:
    """The text outside code blocks (a `#` there is a comment, a `[x](y)` is code)."""
    return FENCE.sub("", path.read_text())


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(path)):
        base = anchor(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def test_the_anchor_rule_matches_github_on_this_projects_headings() -> None:
    assert anchor("In your own state machines: `HeterogeneousTrainingTask`") == (
        "in-your-own-state-machines-heterogeneoustrainingtask"
    )
    assert anchor("Capacity: retries, fallbacks, reserved capacity") == (
        "capacity-retries-fallbacks-reserved-capacity"
    )
    assert anchor("What `make synth` produces") == "what-make-synth-produces"
    assert anchor("`status`, `logs`, `list`, `stop`") == "status-logs-list-stop"


def test_the_readme_is_short_with_a_table_of_contents() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"
    text = prose(README)
    start = text.index("\n## Contents\n")
    contents = text[start : text.index("\n## ", start + 1)]
    listed = {target[1:] for target in LINK.findall(contents)}
    sections = {anchor(h) for h in re.findall(r"^## +(.+)$", text, re.MULTILINE)} - {"contents"}
    assert listed == sections, "the table of contents lists each section of the README once"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    targets = {target.split("#")[0] for target in LINK.findall(prose(README))}
    missing = [p.name for p in PAGES if f"docs/{p.name}" not in targets]
    assert missing == [], f"link these from the README's 'Read on': {missing}"


@pytest.mark.parametrize(
    "page", [p for p in LINKED_FROM_ANYWHERE if p.exists()], ids=lambda p: p.name
)
def test_every_relative_link_lands(page: Path) -> None:
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path_part, _, fragment = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"
