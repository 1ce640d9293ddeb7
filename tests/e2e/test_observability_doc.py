"""docs/observability.md is generated from the example app, and current."""

from __future__ import annotations

from pathlib import Path

from hetero_constructs.cli.observability_doc import render
from tests.fixtures.example_app import Synthesized


def test_docs_observability_is_generated_from_the_example(example: Synthesized) -> None:
    """The page is what the code builds for the example job (regenerate:
    python -m hetero_constructs.cli.observability_doc > docs/observability.md)."""
    page = Path(__file__).parents[2] / "docs" / "observability.md"
    assert page.read_text() == render(example.template)
