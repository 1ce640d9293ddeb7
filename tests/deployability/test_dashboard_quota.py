"""DEPLOY-DASHBOARD-BODY on template dicts: a body at its limits passes, one over fails, with
what resolves at deploy time sized worst-case."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hetero_constructs.deployability.catalogue import check_template, measure_template
from hetero_constructs.deployability.dashboard_quotas import (
    METRICS_PER_DASHBOARD,
    METRICS_PER_WIDGET,
    WIDGETS_PER_DASHBOARD,
)
from hetero_constructs.deployability.quota import StackTemplate

QUOTA = "DEPLOY-DASHBOARD-BODY"


def _widget(metrics: int) -> dict[str, Any]:
    return {
        "type": "metric",
        "properties": {
            "region": "REGION",
            "metrics": [["AWS/States", f"M{index}"] for index in range(metrics)],
        },
    }


def _template(widgets: list[dict[str, Any]]) -> dict[str, Any]:
    # As CDK renders a body with a token: Fn::Join around the region's Ref.
    head, _, tail = json.dumps({"widgets": widgets}).partition("REGION")
    body: Any = {"Fn::Join": ["", [head, {"Ref": "AWS::Region"}, tail]]} if tail else head
    return {
        "Resources": {
            "Board": {"Type": "AWS::CloudWatch::Dashboard", "Properties": {"DashboardBody": body}}
        }
    }


def _measured(template: dict[str, Any]) -> dict[str, int]:
    return {
        m.unit: m.measured for m in measure_template(StackTemplate(template)) if m.quota == QUOTA
    }


@pytest.mark.parametrize(
    ("widgets", "over"),
    [
        ([_widget(1)] * WIDGETS_PER_DASHBOARD, False),
        ([_widget(1)] * (WIDGETS_PER_DASHBOARD + 1), True),
        ([_widget(METRICS_PER_WIDGET)], False),
        ([_widget(METRICS_PER_WIDGET + 1)], True),
        ([_widget(METRICS_PER_DASHBOARD // 5)] * 5, False),
        ([_widget(METRICS_PER_DASHBOARD // 5)] * 5 + [_widget(1)], True),
    ],
)
def test_widgets_and_metrics_at_and_over_their_limits(
    widgets: list[dict[str, Any]], over: bool
) -> None:
    template = _template(widgets)
    failed = [m for m in check_template(StackTemplate(template)) if m.quota == QUOTA]
    assert bool(failed) is over
    for measurement in failed:
        assert measurement.logical_id == "Board"
        assert measurement.measured > measurement.limit


def test_counts_every_widget_and_metric_of_a_body_with_tokens() -> None:
    assert _measured(_template([_widget(3), _widget(2), {"type": "text"}])) == {
        "widgets": 3,
        "metrics in one widget": 3,
        "metrics": 5,
    }


def test_a_body_that_is_no_json_object_is_left_to_cloudformation() -> None:
    assert _measured(_template([])) == {"widgets": 0, "metrics in one widget": 0, "metrics": 0}
    broken = {
        "Resources": {
            "Board": {
                "Type": "AWS::CloudWatch::Dashboard",
                "Properties": {"DashboardBody": "{not json"},
            }
        }
    }
    assert _measured(broken) == {}
