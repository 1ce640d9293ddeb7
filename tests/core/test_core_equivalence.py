"""Shortcuts taken for speed give exactly what they replace."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hetero_constructs.core.context import RuleContext, cached_property
from hetero_constructs.core.request.hyperparameters import encode
from hetero_constructs.core.rules import RULES, run_rules
from hetero_constructs.core.spec_file import read_spec
from tests.core.specs import spec_dict

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_hyperparameter_encoding_is_json_dumps(value: Any) -> None:
    assert encode(value) == json.dumps(value)


def test_cached_property_computes_once_per_instance() -> None:
    calls: list[int] = []

    class Facts:
        @cached_property
        def answer(self) -> int:
            """The answer."""
            calls.append(1)
            return len(calls)

    first, second = Facts(), Facts()
    assert (first.answer, first.answer, second.answer) == (1, 1, 2)
    assert Facts.answer.__doc__ == "The answer."


def test_dispatch_gives_what_each_rule_reports_in_catalogue_order() -> None:
    data = spec_dict(
        {"job_name": "bad_name", "instance_type": "ml.p4d.24xlarge", "region": "xx-nowhere-1"}
    )
    spec = read_spec(data).spec
    assert spec is not None
    context = RuleContext(spec)
    expected = [v for r in RULES if not r.backstop for v in r.run(context)]
    assert len(expected) >= 3
    assert run_rules(RuleContext(spec)) == expected
