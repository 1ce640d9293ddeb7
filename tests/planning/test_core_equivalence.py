"""Shortcuts taken for speed give exactly what they replace."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hetero_constructs.checks.registry import RULES, run_rules
from hetero_constructs.request.context import RuleContext, cached_property
from hetero_constructs.request.hyperparameters import encode
from hetero_constructs.spec.file.reader import read_spec
from hetero_constructs.spec.training import TrainingSpec
from tests.fixtures.rule_cases import CASES
from tests.fixtures.specs import spec_dict
from tests.fixtures.strategies import spec_dicts

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


def skipped_rules_that_find_something(spec: TrainingSpec) -> list[str]:
    """Rules the runner skips for the spec (a feature they need is not used) that, run all the
    same, find something: there must be none."""
    context = RuleContext(spec)
    skipped = [r for r in RULES if r.needs and not r.needs & context.features]
    return [r.id for r in skipped if list(r.check(context))]


def test_rules_skipped_for_unused_features_find_nothing_in_the_rule_cases() -> None:
    """Each rule's failing and passing cases (test_rules), run with every rule."""
    specs = [
        read_spec(spec_dict(case) if "framework" not in case else dict(case)).spec
        for failing, passing in CASES.values()
        for case in [*failing, *passing]
    ]
    assert len(specs) > 100
    for spec in specs:
        if spec is not None:
            assert skipped_rules_that_find_something(spec) == [], spec


@st.composite
def specs_with_optional_features(draw: st.DrawFn) -> dict[str, Any]:
    """Generated specs, each optional feature present or not, its value fine or not."""
    data = draw(spec_dicts())
    options: dict[str, st.SearchStrategy[Any]] = {
        "tags": st.sampled_from(
            [{}, {"team": "ml"}, {"aws:x": "y"}, {"hetero-constructs:slot": "1"}]
            + [{f"t{i}": "v" for i in range(n)} for n in (47, 51)]
        ),
        "acknowledgments": st.sampled_from(
            [{}, {"HC-FRAMEWORK-VERSION": "ok"}, {"API-ROLE": "a reason long enough"}]
        ),
        "metric_definitions": st.sampled_from([[], [{"Name": "", "Regex": "x"}]]),
        "subnets": st.sampled_from([[], ["subnet-0abc"], ["subnet_bad"]]),
        "security_group_ids": st.sampled_from([[], ["sg-1"]]),
        "volume_kms_key": st.sampled_from(["", "bad key!", "alias/training"]),
        "output_kms_key": st.sampled_from(["", "k" * 2049]),
        "checkpoint_local_path": st.sampled_from(["", "/opt/ml/checkpoints", "x" * 5000]),
        "keep_alive_period_in_seconds": st.sampled_from([0, 600, 7200]),
        "smddp_collective": st.sampled_from(["AllReduce", "AllGather"]),
    }
    for key, values in options.items():
        if draw(st.booleans()):
            data[key] = draw(values)
    return data


@settings(max_examples=300, deadline=None)
@given(specs_with_optional_features())
def test_rules_skipped_for_unused_features_find_nothing(data: dict[str, Any]) -> None:
    spec = read_spec(data).spec
    if spec is not None:
        assert skipped_rules_that_find_something(spec) == []
