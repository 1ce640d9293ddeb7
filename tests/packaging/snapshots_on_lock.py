"""pytest plugin for ``make test-minimum``: template snapshots hold only on the locked aws-cdk-lib.

A snapshot records the template that the aws-cdk-lib of ``requirements/lock.txt`` synthesizes.
Older releases differ in CDK's own defaults (before 2.274, state machine roles carry no
``aws:SourceArn``/``aws:SourceAccount`` condition), so on another aws-cdk-lib every test that
compares with a snapshot is skipped, with the versions in the reason; the rest of the suite
runs. Loaded with ``-p tests.packaging.snapshots_on_lock``.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.version import Version

LOCK = Path(__file__).resolve().parents[2] / "requirements" / "lock.txt"


def locked_version(package: str, lock: Path = LOCK) -> Version:
    prefix = f"{package}=="
    for line in lock.read_text().splitlines():
        if line.lower().startswith(prefix):
            return Version(line[len(prefix) :].split("#", 1)[0].strip())
    raise LookupError(f"{lock} pins no {package}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    locked = locked_version("aws-cdk-lib")
    installed = Version(version("aws-cdk-lib"))
    if installed == locked:
        return
    skip = pytest.mark.skip(
        reason=f"the snapshot is of the template aws-cdk-lib {locked} (requirements/lock.txt) "
        f"synthesizes; this run has {installed}, whose defaults differ"
    )
    for item in items:
        if "snapshot" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)
