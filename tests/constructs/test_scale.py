"""Scale: 99 training jobs in one app (50 and 49 in one stack) fit every AWS quota that applies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hetero_constructs import HeterogeneousTrainingJob, InstanceGroup
from hetero_constructs.deployability.catalogue import measure_template
from hetero_constructs.deployability.quota import StackTemplate
from tests.fixtures.construct_specs import spec

JOBS_PER_STACK = 50
# VPC, keys and encryption: ~18.5 KB of template per job; 52 of the benchmark's fit
# (benchmarks/bench_capacity.py), 49 of this fixture's (its job carries a channel more). The
# data group's own metric definitions (six built-in ones per job) took one job of each.
SECURED_JOBS_PER_STACK = 49
SECURED = dict(
    subnets=["subnet-0abc1234", "subnet-0def5678"],
    security_group_ids=["sg-0abc1234"],
    volume_kms_key="arn:aws:kms:us-west-2:111122223333:key/11111111-2222-3333-4444-555555555555",
    output_kms_key="arn:aws:kms:us-west-2:111122223333:key/11111111-2222-3333-4444-555555555555",
    enable_network_isolation=True,
    encrypt_inter_container_traffic=True,
)


@pytest.fixture(scope="module")
def app_of_100(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """50 of the benchmark's jobs in one stack and 50 with VPC, keys and encryption in
    another, with path metadata as `cdk synth` writes it."""
    outdir: Path = tmp_path_factory.mktemp("scale.out")
    app = cdk.App(outdir=str(outdir), context={"aws:cdk:enable-path-metadata": True})
    groups = [
        InstanceGroup("data", "ml.c5.18xlarge", 2),
        InstanceGroup("gpu", "ml.p4d.24xlarge", 2),
    ]
    for name, extra in (("Plain", {}), ("Secured", SECURED)):
        stack = cdk.Stack(app, name, env=cdk.Environment(region="us-west-2"))
        for index in range(JOBS_PER_STACK if not extra else SECURED_JOBS_PER_STACK):
            HeterogeneousTrainingJob(
                stack,
                f"Job{index}",
                job_name_prefix=f"{name.lower()}-{index}",
                spec=spec(instance_groups=groups, **extra),
            )
    assembly = app.synth()  # the deployability check runs here and would fail the synth
    return {
        s.stack_name: {"template": s.template, "path": Path(s.template_full_path)}
        for s in assembly.stacks
    }


@pytest.mark.parametrize("stack_name", ["Plain", "Secured"])
def test_the_stated_jobs_per_stack_fit_every_quota(
    app_of_100: dict[str, dict[str, Any]], stack_name: str
) -> None:
    synthesized = app_of_100[stack_name]
    measured = measure_template(
        StackTemplate(synthesized["template"], size_bytes=synthesized["path"].stat().st_size)
    )
    assert [m for m in measured if m.exceeded] == []
    by_quota: dict[str, list[int]] = {}
    for measurement in measured:
        by_quota.setdefault(measurement.quota, []).append(measurement.measured)
    assert max(by_quota["DEPLOY-ROLE-INLINE-POLICIES"]) < 10_240
    assert max(by_quota["DEPLOY-STACK-RESOURCES"]) < 500
    assert max(by_quota["DEPLOY-EVENT-PATTERN-SIZE"]) < 2_048


def test_resources_per_job_are_few_and_the_shared_ones_do_not_grow(
    app_of_100: dict[str, dict[str, Any]],
) -> None:
    resources = app_of_100["Plain"]["template"]["Resources"]
    per_job: dict[str, int] = {}
    shared = []
    for logical_id, resource in resources.items():
        owner = (resource.get("Metadata", {}).get("aws:cdk:path", "") + "//").split("/")[1]
        if owner.startswith("Job"):
            per_job[owner] = per_job.get(owner, 0) + 1
        else:
            shared.append(logical_id)
    assert len(per_job) == JOBS_PER_STACK
    # State machine, execution role and control role (policies inline), one alarm.
    assert set(per_job.values()) == {4}
    assert len(shared) < 40  # the runner: Lambdas, table, rules, queue, alarms, shared role
    policies = [r for r in resources.values() if r["Type"] == "AWS::IAM::Policy"]
    shared_policies = [p for p in policies if "Runner" in str(p["Properties"].get("Roles"))]
    for policy in shared_policies:
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        assert len(statements) < 15  # constant, whatever the number of jobs
