"""Issue 33 item 2: a stack synthesized for a real account (``env=cdk.Environment(account=...)``,
as most apps are) serves and runs under that account id, not moto's default."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import aws_cdk as cdk
import boto3
import pytest

from hetero_constructs import HeterogeneousTrainingJob
from hetero_constructs.cli import main
from tests.fixtures.construct_specs import spec

ACCOUNT = "111122223333"


@pytest.fixture(scope="module")
def accounted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("accounted.out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Accounted", env=cdk.Environment(account=ACCOUNT, region="us-west-2"))
    HeterogeneousTrainingJob(stack, "Job", job_name_prefix="accounted", spec=spec())
    app.synth()
    return outdir / "Accounted.template.json"


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv), out=out)
    return code, out.getvalue()


def test_a_stack_synthesized_for_an_account_serves_and_runs_under_it(
    accounted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hetero_constructs.local.account import LocalAccount
    from hetero_constructs.local.training import Outcome

    with LocalAccount([str(accounted)], port=0, simulate=Outcome.parse("Completed")) as account:
        for key, value in {
            "AWS_ENDPOINT_URL": account.url,
            "AWS_DEFAULT_REGION": "us-west-2",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        (machine,) = account.stacks["Accounted"]
        assert f":{ACCOUNT}:stateMachine:" in machine
        assert boto3.client("sts").get_caller_identity()["Account"] == ACCOUNT
        code, text = cli("run", "Accounted/Job", "--name", "accounted-1", "--no-follow", "--json")
        assert code == 0, text
        assert f":{ACCOUNT}:execution:" in json.loads(text)["executionArn"]
