"""Construct paths without a call into jsii for each: read once per scope, computed for children.

A path read from jsii is two calls; tasks and their children ask for theirs often. The scope is
kept with its path, so its id stays its own.
"""

from __future__ import annotations

from constructs import IConstruct

_PATHS: dict[int, tuple[IConstruct, str]] = {}


def node_path(scope: IConstruct) -> str:
    """``scope.node.path``, read from jsii once per scope."""
    cached = _PATHS.get(id(scope))
    if cached is not None and cached[0] is scope:
        return cached[1]
    path = scope.node.path
    _PATHS[id(scope)] = (scope, path)
    return path


def child_path(scope: IConstruct, construct_id: str) -> str:
    """The path a child ``construct_id`` of ``scope`` gets (constructs turns '/' into '--')."""
    parent = node_path(scope)
    child = construct_id.replace("/", "--")
    return f"{parent}/{child}" if parent else child


def remember_path(construct: IConstruct, path: str) -> None:
    """Record a path computed with ``child_path``, so its children need no call to find theirs."""
    _PATHS[id(construct)] = (construct, path)


__all__ = ["child_path", "node_path", "remember_path"]
