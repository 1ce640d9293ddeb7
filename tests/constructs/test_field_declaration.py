"""A spec field is one declaration: a field added with ``spec_field(api=...)`` alone is read,
written, type-checked, sent, checked against the API model, documented and carried by the
constructs' props into the template (``tests/fixtures/extended_spec.py`` declares it)."""

from __future__ import annotations

import dataclasses
from typing import Any

import aws_cdk as cdk
import pytest

from hetero_constructs import HeterogeneousTrainingJob
from hetero_constructs.planning import plan
from hetero_constructs.request.context import Deployment, spec_features
from hetero_constructs.spec import reference
from hetero_constructs.spec.fields import TYPE_RULE
from hetero_constructs.spec.file.reader import read_spec, spec_from_dict
from hetero_constructs.spec.file.writer import spec_to_dict
from hetero_constructs.spec.schema import INTEGER, spec_field
from hetero_constructs.spec.training import TrainingSpec
from tests.fixtures import construct_specs
from tests.fixtures.extended_spec import FIELD, MEMBER, with_max_pending_time
from tests.fixtures.specs import spec_dict
from tests.fixtures.templates import definitions

PENDING = 7200  # within the model's 1800 to 2419200


def test_a_field_declared_once_is_read_written_sent_and_documented(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extended = with_max_pending_time(monkeypatch)
    spec = spec_from_dict(spec_dict({FIELD: PENDING}))
    assert isinstance(spec, extended)
    assert getattr(spec, FIELD) == PENDING
    assert spec_to_dict(spec)[FIELD] == PENDING
    assert spec_from_dict(spec_to_dict(spec)) == spec
    assert FIELD not in spec_to_dict(spec_from_dict(spec_dict()))

    planned = plan(spec)
    assert planned.violations == ()
    assert planned.request is not None
    assert planned.request["StoppingCondition"] == {
        "MaxRuntimeInSeconds": 86400,
        "MaxPendingTimeInSeconds": PENDING,
    }
    unset = plan(spec_from_dict(spec_dict())).request
    assert unset is not None
    assert "MaxPendingTimeInSeconds" not in unset["StoppingCondition"]
    assert FIELD in spec_features(spec)

    row = f"| `{FIELD}` | `{FIELD}` | `{FIELD}` | `{MEMBER}` | integer | `null` |"
    assert row in reference.render()


def test_the_declared_type_and_the_models_bounds_hold_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with_max_pending_time(monkeypatch)
    wrong = read_spec(spec_dict({FIELD: "two hours"}))
    assert [(v.rule, v.path) for v in wrong.violations] == [(TYPE_RULE, FIELD)]
    # The model's minimum (1800 s), read from botocore: the whole-request rule reports it,
    # and botocore's own report with it.
    short = plan(spec_from_dict(spec_dict({FIELD: 60})))
    first = short.violations[0]
    assert (first.rule, first.path, first.value) == ("API-REQUEST", f"request.{MEMBER}", 60)
    assert {v.rule for v in short.violations} == {"API-REQUEST"}


def test_the_constructs_props_carry_it_into_the_template(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extended = with_max_pending_time(monkeypatch)
    base = construct_specs.spec()
    fields: dict[str, Any] = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    stack = construct_specs.stack()
    job = HeterogeneousTrainingJob(stack, "Job", spec=extended(**fields, **{FIELD: PENDING}))
    assert job.request["StoppingCondition"]["MaxPendingTimeInSeconds"] == PENDING
    app = stack.node.root
    assert isinstance(app, cdk.App)
    template = app.synth().get_stack_by_name(stack.stack_name).template
    ((_, definition),) = definitions(template).items()
    payload = definition["States"]["Run training job"]["Parameters"]["Payload"]
    # What the submit Lambda plans from, at run time.
    assert payload["spec"][FIELD] == PENDING
    deployment = Deployment(job_name=f"{payload['jobNamePrefix']}-run", **payload["deployment"])
    request = plan(spec_from_dict(payload["spec"]), deployment).request
    assert request is not None
    assert request["StoppingCondition"]["MaxPendingTimeInSeconds"] == PENDING


@pytest.mark.parametrize(
    ("member", "problem"),
    [
        ("StoppingCondition.MaxPendingTime", "is not a member of CreateTrainingJob's request"),
        ("RoleArn", "a integer field cannot be sent as RoleArn, a string"),
    ],
)
def test_a_declared_member_is_the_models_or_the_spec_is_refused(member: str, problem: str) -> None:
    from hetero_constructs.request.api_fields import api_fields
    from hetero_constructs.spec.schema import spec_object

    @spec_object
    class Misdeclared(TrainingSpec):
        extra: int | None = spec_field(INTEGER, default=None, api=member, doc="A test field.")

    with pytest.raises(ValueError, match=problem):
        api_fields(Misdeclared)


def test_a_member_path_is_checked_where_it_is_declared() -> None:
    with pytest.raises(ValueError, match="is not a member path of the request"):
        spec_field(INTEGER, default=None, api="StoppingCondition/MaxPendingTime", doc="x")
