"""What a training run adds to the request: the marker tags every job carries."""

from __future__ import annotations

from collections.abc import Iterator

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.contract import lifecycle
from hetero_constructs.request.context import RuleContext
from hetero_constructs.service import model as service_model

_MARKERS = (
    lifecycle.TAG_RUNNER,
    lifecycle.TAG_EXECUTION,
    lifecycle.TAG_SLOT,
    lifecycle.TAG_ATTEMPT,
)
_MARKER_PREFIX = "hetero-constructs:"


@rule(
    "RUN-TAGS",
    source="handlers/submit.py: every job is tagged with its runner, execution, slot and attempt "
    "(ownership and event routing); botocore model TagList (maximum count)",
    example='tags: {"team": "ml-platform"}',
    needs=("tags",),
)
def run_tags(context: RuleContext) -> Iterator[Finding]:
    """Room for the run's marker tags: their keys are reserved and they count in the limit."""
    spec_tags = context.spec.tags
    limit = service_model.bounds("Tags").maximum
    if limit is not None and len(spec_tags) + len(_MARKERS) > limit:
        yield Finding(
            "tags",
            f"Every job also carries {len(_MARKERS)} tags of its run, so the spec's tags and "
            "those would exceed the API's limit.",
            len(spec_tags),
            f"at most {limit - len(_MARKERS)} tags",
            "remove some tags",
        )
    for key in spec_tags:
        if context.known(key) and key.startswith(_MARKER_PREFIX):
            yield Finding(
                f"tags.{key}",
                "Tag keys starting with 'hetero-constructs:' mark who created a job; a run "
                "sets them itself.",
                key,
                "keys not starting with hetero-constructs:",
                "rename the tag",
            )


__all__ = [
    "run_tags",
]
