"""Where the Lambda handlers are: `lambda/` in a checkout, the packaged copy when installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[1] / "lambda"


def lambda_source() -> Path:
    """The folder holding ``submit.py``, ``events.py`` and their helpers."""
    if _CHECKOUT.is_dir():
        return _CHECKOUT
    spec = importlib.util.find_spec("hetero_constructs.lambda_handlers")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the Lambda handlers are missing from this installation")
    return Path(next(iter(spec.submodule_search_locations)))
