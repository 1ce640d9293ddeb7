"""Snapshot-friendly templates: the same code gives the same template, hashes aside."""

from __future__ import annotations

import json
import re
from typing import Any

from aws_cdk import Stack
from aws_cdk.assertions import Template

_ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def normalized_template(stack: Stack) -> dict[str, Any]:
    """The stack's template with asset hashes replaced by ``ASSET-HASH``.

    Asset hashes change with any byte of the packaged code (and with the library version that
    packages the Lambda); replacing them keeps snapshot tests about the infrastructure. Use it
    with any snapshot tool, e.g. ``assert normalized_template(stack) == snapshot``.
    """
    text = json.dumps(Template.from_stack(stack).to_json(), sort_keys=True)
    return json.loads(_ASSET_HASH.sub("ASSET-HASH", text))  # type: ignore[no-any-return]


__all__ = [
    "normalized_template",
]
