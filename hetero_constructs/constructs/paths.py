"""Construct paths: a child's path computed from its parent's, read from the tree once."""

from __future__ import annotations


def child_path(parent_path: str, construct_id: str) -> str:
    """The path a child ``construct_id`` of a construct at ``parent_path`` gets.

    Known before the child exists (its checks name it); constructs turns '/' into '--'.
    """
    child = construct_id.replace("/", "--")
    return f"{parent_path}/{child}" if parent_path else child


__all__ = ["child_path"]
