"""The spec-field reference (``docs/spec-fields.md``), generated from the schema.

Run ``python -m hetero_constructs.spec.reference > docs/spec-fields.md`` (``make docs``); a
test keeps the file in step with the code.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Any

from hetero_constructs.spec import training
from hetero_constructs.spec.cluster import InstanceFallback, InstanceGroup, TrainingChannel
from hetero_constructs.spec.distribution import LauncherConfig
from hetero_constructs.spec.schema import SpecField, schema_of
from hetero_constructs.spec.training import TrainingMetric

_HEADER = """# Spec fields

Every field of a spec, generated from the one declaration of each field in the code
(`hetero_constructs.spec.schema`; `python -m hetero_constructs.spec.reference`). A spec
file uses the *file key*; the Python API the *field* name; *SDK* is the name the SageMaker
Python SDK's estimator gives it (- where it has none); *API* is the CreateTrainingJob member
the value is sent as, as it is (- where the request takes it in a shape of its own, or not at
all). A field without a default is required; so is one marked *required in a file*.
"""


def _objects() -> tuple[tuple[type, str], ...]:
    """The objects of a spec, in the order the reference lists them, with where they sit in a
    file (the spec class looked up when rendered: a test may extend its fields)."""
    return (
        (training.TrainingSpec, "the spec file's top level"),
        (InstanceGroup, "each item of `instance_groups`"),
        (InstanceFallback, "each item of a group's `fallbacks`"),
        (TrainingChannel, "each value of `channels` (a bare S3 URI is taken too)"),
        (TrainingMetric, "each item of `metric_definitions`"),
        (LauncherConfig, "the options under a launcher's key of `distribution`"),
    )


def _default(declared: SpecField) -> str:
    if declared.required:
        return "required"
    value: Any = declared.default
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, tuple):
        value = list(value)
    shown = json.dumps(value)
    return f"{shown}, required in a file" if declared.file_required else shown


def _key(declared: SpecField) -> str:
    if declared.file_key is None:
        return "-"
    return ", ".join(f"`{key}`" for key in (declared.file_key, *declared.extra_file_keys))


def render() -> str:
    lines = [_HEADER]
    for cls, where in _objects():
        lines.append(f"## `{cls.__name__}`: {where}\n")
        lines.append("| Field | File key | SDK | API | Type | Default | Doc |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- |")
        for declared in schema_of(cls):
            sdk = f"`{declared.sdk}`" if declared.sdk else "-"
            api = f"`{declared.api}`" if declared.api else "-"
            doc = declared.doc.replace("|", "\\|")
            lines.append(
                f"| `{declared.name}` | {_key(declared)} | {sdk} | {api} | {declared.type.name} "
                f"| `{_default(declared)}` | {doc} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    sys.stdout.write(render())


__all__ = [
    "main",
    "render",
]


if __name__ == "__main__":
    main()
