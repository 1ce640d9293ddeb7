"""The quotas of a CloudWatch dashboard's body: widgets per dashboard, metrics per widget and
per dashboard, each counted in the body as CloudFormation will send it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hetero_constructs.deployability.quota import Reading, TemplateView, quota

CLOUDWATCH_QUOTAS = (
    "CloudWatch User Guide, 'CloudWatch service quotas', Dashboards "
    "(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_limits.html) "
    "and CloudWatch API Reference, 'Dashboard Body Structure and Syntax'"
)
WIDGETS_PER_DASHBOARD = 500
METRICS_PER_WIDGET = 500
METRICS_PER_DASHBOARD = 2_500


def _body(view: TemplateView, properties: Any) -> tuple[dict[str, Any], bool] | None:
    body = properties.get("DashboardBody")
    if body is None:
        return None
    text, estimated = view.sized(view.worst.text, body)
    try:
        parsed = json.loads(text)
    except (TypeError, ValueError):
        return None  # not JSON even worst-case: CloudFormation itself says so at deploy
    return (parsed, estimated) if isinstance(parsed, dict) else None


def _metrics(widget: Any) -> int:
    properties = widget.get("properties") if isinstance(widget, dict) else None
    metrics = properties.get("metrics") if isinstance(properties, dict) else None
    return len(metrics) if isinstance(metrics, list) else 0


@quota(
    "DEPLOY-DASHBOARD-BODY",
    limit=(
        f"{WIDGETS_PER_DASHBOARD} widgets per dashboard, {METRICS_PER_WIDGET} metrics per "
        f"widget, {METRICS_PER_DASHBOARD:,} metrics per dashboard"
    ),
    source=(
        f"{CLOUDWATCH_QUOTAS}: 'Up to 500 widgets per dashboard. Up to 500 metrics per "
        "dashboard widget. Up to 2500 metrics per dashboard, across all widgets'; the body "
        "'can include an array of between 0 and 500 widget objects'. CloudWatch documents no "
        "byte limit of its own for the body; DEPLOY-TEMPLATE-SIZE bounds it with the template."
    ),
    fix=(
        "split the dashboard (e.g. one per training job, add_dashboard() on each job, or fewer "
        "metric definitions per job); these quotas cannot be raised"
    ),
)
def dashboard_body(view: TemplateView) -> Iterator[Reading]:
    """A dashboard's body fits CloudWatch's widget and metric quotas.

    Each ``AWS::CloudWatch::Dashboard``'s ``DashboardBody``, with worst-case values for what
    resolves at deploy time: its widgets, the metrics of its largest widget (a metric math or
    ``SEARCH`` expression counts as one), and its metrics in all.
    """
    for logical_id, properties in view.of_type("AWS::CloudWatch::Dashboard"):
        found = _body(view, properties)
        if found is None:
            continue
        body, estimated = found
        found_widgets = body.get("widgets")
        widgets: list[Any] = found_widgets if isinstance(found_widgets, list) else []
        counts = [_metrics(widget) for widget in widgets]
        subject = f"dashboard {logical_id}"
        location = "Properties/DashboardBody"
        yield Reading(
            subject,
            logical_id,
            location,
            len(widgets),
            WIDGETS_PER_DASHBOARD,
            "widgets",
            f"The body of dashboard {logical_id} has more widgets than CloudWatch accepts.",
            estimated,
        )
        yield Reading(
            subject,
            logical_id,
            location,
            max(counts, default=0),
            METRICS_PER_WIDGET,
            "metrics in one widget",
            f"A widget of dashboard {logical_id} has more metrics than CloudWatch accepts.",
            estimated,
        )
        yield Reading(
            subject,
            logical_id,
            location,
            sum(counts),
            METRICS_PER_DASHBOARD,
            "metrics",
            f"Dashboard {logical_id} has more metrics than CloudWatch accepts.",
            estimated,
        )


__all__ = [
    "METRICS_PER_DASHBOARD",
    "METRICS_PER_WIDGET",
    "WIDGETS_PER_DASHBOARD",
    "dashboard_body",
]
