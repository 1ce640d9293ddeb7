"""A template to deploy locally: its body, and where it was synthesized (if it was)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Template:
    """``body``: the template. ``path``: the synthesized file (``cdk.out/<Stack>.template.json``)
    it was read from, if any. ``assembly``: the folder it was synthesized into (its assets, its
    ``manifest.json``), if known."""

    body: dict[str, Any]
    path: Path | None
    assembly: Path | None

    @classmethod
    def load(
        cls,
        template: Mapping[str, Any] | str | os.PathLike[str],
        template_dir: str | os.PathLike[str] | None = None,
    ) -> Template:
        """A template file (its folder is its assembly unless ``template_dir`` says otherwise),
        or a template dict and the folder it was synthesized into."""
        assembly = Path(template_dir) if template_dir is not None else None
        if isinstance(template, str | os.PathLike):
            path = Path(template)
            return cls(json.loads(path.read_text()), path, assembly or path.parent)
        return cls(dict(template), None, assembly)

    @property
    def stack_name(self) -> str:
        """The stack's name: the file's name up to its first dot, else ``LocalStack``."""
        return self.path.name.split(".")[0] if self.path is not None else "LocalStack"


__all__ = ["Template"]
