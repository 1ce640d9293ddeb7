"""pyproject.toml's ranges, the lock and the minimum environment agree with each other."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_pins() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pins", ROOT / "requirements" / "pins.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pins"] = module
    spec.loader.exec_module(module)
    return module


pins = _load_pins()
DECLARED = pins.declared()
LOCK = pins.read_pins(pins.LOCK)
MINIMUM = pins.read_pins(pins.MINIMUM)
LIBRARY = [item for item in DECLARED if item.group in pins.LIBRARY_GROUPS]


def test_library_requirements_are_bounded_ranges() -> None:
    """A library that pins exactly cannot be installed beside its user's own versions."""
    for item in LIBRARY:
        operators = {spec.operator for spec in item.requirement.specifier}
        assert ">=" in operators, f"{item.requirement}: no lower bound"
        assert "<" in operators, f"{item.requirement}: no upper bound"
        assert "==" not in operators, f"{item.requirement}: an exact pin"


@pytest.mark.parametrize("name,pinned", [("lock", LOCK), ("minimum", MINIMUM)])
def test_every_requirement_is_pinned_within_its_range(name: str, pinned: dict[str, object]) -> None:
    for item in DECLARED:
        assert item.name in pinned, f"{item.requirement} ({item.group}) is not in {name}.txt"
        version = pinned[item.name]
        assert item.requirement.specifier.contains(version, prereleases=True), (
            f"{name}.txt pins {item.name}=={version}, outside {item.requirement} ({item.group})"
        )


def test_minimum_holds_every_requirement_at_its_floor() -> None:
    for item in DECLARED:
        if item.floor is None:
            assert MINIMUM[item.name] == LOCK[item.name], item.name
            continue
        highest = max(other.floor or item.floor for other in DECLARED if other.name == item.name)
        assert MINIMUM[item.name] == highest, (
            f"minimum.txt pins {item.name}=={MINIMUM[item.name]}, but {item.requirement} "
            f"({item.group}) starts at {highest}: run `make lock-minimum`"
        )


def test_minimum_runs_aws_cdk_lib_older_than_the_lock() -> None:
    """Otherwise CI's second run would test nothing the first did not."""
    assert MINIMUM["aws-cdk-lib"] < LOCK["aws-cdk-lib"]


def test_pins_read_name_version_lines_only(tmp_path: Path) -> None:
    constraints = tmp_path / "c.txt"
    constraints.write_text("# header\nPyYAML==6.0.4  # why\n\ntorch==2.13.0\n")
    assert {k: str(v) for k, v in pins.read_pins(constraints).items()} == {
        "pyyaml": "6.0.4",
        "torch": "2.13.0",
    }
    constraints.write_text("torch>=2\n")
    with pytest.raises(ValueError, match="not a name==version pin"):
        pins.read_pins(constraints)


def test_the_snapshot_plugin_reads_the_locked_aws_cdk_lib() -> None:
    from tests.fixtures.snapshots_on_lock import locked_version

    assert locked_version("aws-cdk-lib") == LOCK["aws-cdk-lib"]
    with pytest.raises(LookupError, match="pins no"):
        locked_version("no-such-package")


def test_moto_range_is_the_tested_range() -> None:
    """The local account reaches into moto's internals, which a patch release can move: the
    range admits only what CI runs the suite on, the minimum's moto to the lock's."""
    for item in DECLARED:
        if item.name != "moto":
            continue
        specifier = item.requirement.specifier
        after_lock = pins.Version(
            f"{LOCK['moto'].major}.{LOCK['moto'].minor}.{LOCK['moto'].micro + 1}"
        )
        assert MINIMUM["moto"] < LOCK["moto"], "the minimum and the lock test the same moto"
        assert item.floor == MINIMUM["moto"], item.requirement
        assert not specifier.contains(after_lock), (
            f"{item.requirement} admits untested {after_lock}"
        )
