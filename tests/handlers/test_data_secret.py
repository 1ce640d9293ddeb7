"""Every heterogeneous job gets a fresh data-plane secret in its environment (issue 24)."""

from __future__ import annotations

import re
from typing import Any

from hetero_constructs.handlers import submit
from hetero_constructs.handlers.data_secret import DATA_SECRET_ENV, with_data_secret
from hetero_constructs.runtime import data
from tests.fixtures.handler_world import HandlerWorld

HETERO = {
    "ResourceConfig": {"InstanceGroups": [{"InstanceGroupName": "a"}, {"InstanceGroupName": "b"}]}
}


def test_the_lambda_sets_the_variable_the_data_plane_reads() -> None:
    assert DATA_SECRET_ENV == data.SECRET_ENV


def test_each_submitted_job_gets_its_own_secret_and_a_retry_resumes_it(
    world: HandlerWorld,
) -> None:
    secrets = []
    for run in ("run-1", "run-2"):
        execution = world.start(run)
        token = world.token()
        first = submit.handler(world.submit_event(execution, token))
        # A repeated invocation re-plans the request (without a secret) and still finds its job.
        again = submit.handler(world.submit_event(execution, token))
        assert again == {"TrainingJobName": first["TrainingJobName"], "resumed": True}
        secrets.append(world.training.requests[-1]["Environment"][DATA_SECRET_ENV])
    assert len(world.training.requests) == 2
    assert all(re.fullmatch(r"[0-9a-f]{64}", secret) for secret in secrets)
    assert secrets[0] != secrets[1]


def test_only_heterogeneous_jobs_without_one_get_a_secret_where_the_api_has_room() -> None:
    assert with_data_secret({"ResourceConfig": {"InstanceCount": 2}}) == {
        "ResourceConfig": {"InstanceCount": 2}
    }
    own: dict[str, Any] = {**HETERO, "Environment": {DATA_SECRET_ENV: "the user's own"}}
    assert with_data_secret(own) == own
    full = {**HETERO, "Environment": {f"V{i}": "x" for i in range(100)}}
    assert with_data_secret(full) == full
    added = with_data_secret({**HETERO, "Environment": {"A": "1"}})
    assert added["Environment"]["A"] == "1" and len(added["Environment"][DATA_SECRET_ENV]) == 64
