"""The code blocks of the README and docs/ that are meant to run, run.

tests/packaging/test_wheel.py runs the newcomer's files (```lang title="path") and its install,
synth, test and plan lines from an installed wheel. Here, in this checkout:

- every other ```python block of README.md, docs/ and CONTRIBUTING.md, in a stack of its own
  holding the names the docs take as given (``stack``, ``bucket``, ``topic``, ``vpc``, ``spec``,
  ...), which must then synthesize; a fragment that cannot run says so: ```python notrun;
- the README's local-run lines, on the README's own app;
- the `hetero-train plan` lines of docs/, on the repository's example spec.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk.assertions import Template

import hetero_constructs
from hetero_constructs.cli import main
from tests.fixtures.construct_specs import spec as example_spec

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "CONTRIBUTING.md"]
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks(path: Path) -> Iterator[tuple[list[str], str]]:
    """(info words, body) of each fenced block of a page."""
    for match in FENCE.finditer(path.read_text()):
        yield match["info"].split(), match["body"]


def section(path: Path, title: str) -> str:
    text = path.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def commands(text: str) -> list[str]:
    """The shell lines of the ```bash blocks of a text, continuation lines joined."""
    lines = []
    for match in FENCE.finditer(text):
        if match["info"].split()[:1] == ["bash"]:
            body = match["body"].replace("\\\n", " ")
            lines += [line.strip() for line in body.splitlines() if line.strip()]
    return [line for line in lines if not line.startswith("#")]


def cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(argv, out=out)
    return code, out.getvalue()


# --- the Python blocks ----------------------------------------------------------------------

PYTHON_BLOCKS = [
    pytest.param(body, id=f"{page.name}-{index}")
    for page in PAGES
    for index, (info, body) in enumerate(blocks(page))
    if info[:1] == ["python"] and "notrun" not in info and not any("title=" in w for w in info)
]


def given_names(app: cdk.App, stack: cdk.Stack) -> dict[str, Any]:
    """What the docs' snippets take as already there: the imports and a stack's resources."""
    names: dict[str, Any] = {n: getattr(hetero_constructs, n) for n in hetero_constructs.__all__}
    names.update(
        cdk=cdk,
        Duration=cdk.Duration,
        events=cdk.aws_events,
        sfn=sfn,
        tasks=tasks,
        app=app,
        stack=stack,
        bucket=s3.Bucket.from_bucket_name(stack, "GivenBucket", "my-training-bucket"),
        topic=sns.Topic(stack, "GivenTopic", enforce_ssl=True),
        vpc=ec2.Vpc(stack, "GivenVpc", max_azs=2),
        pipeline_role=iam.Role(
            stack, "GivenPipelineRole", assumed_by=iam.ServicePrincipal("states.amazonaws.com")
        ),
        operator_role=iam.Role(stack, "GivenOperatorRole", assumed_by=iam.AccountRootPrincipal()),
        fn=lambda_.Function(
            stack,
            "GivenFunction",
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
        ),
        notify_failure=sfn.Pass(stack, "GivenNotifyFailure"),
        spec=example_spec(),
    )
    return names


def test_the_docs_have_python_blocks_to_run() -> None:
    # The concepts page declares a job, reads a spec file, chains the task, retries capacity.
    assert len(PYTHON_BLOCKS) >= 5


@pytest.mark.parametrize("body", PYTHON_BLOCKS)
def test_python_block_runs_and_its_stack_synthesizes(
    body: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # paths in the docs are relative to the checkout
    app = cdk.App()
    stack = cdk.Stack(app, "Docs", env=cdk.Environment(account="123456789012", region="us-west-2"))
    names = given_names(app, stack)
    given = {child.node.id for child in stack.node.children}
    exec(compile(body, "<docs block>", "exec"), names)
    template = Template.from_stack(stack)
    added = {child.node.id for child in stack.node.children} - given
    if added:  # a block that declares constructs: each of them synthesized
        resources = template.to_json()["Resources"]
        assert resources, added


# --- the README's local run, on the README's app --------------------------------------------


@pytest.fixture(scope="module")
def readme_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's files, synthesized as `npx cdk synth` does."""
    app = tmp_path_factory.mktemp("readme-app")
    for info, body in blocks(ROOT / "README.md"):
        title = next((w for w in info if w.startswith("title=")), None)
        if title:
            path = app / title.removeprefix("title=").strip('"')
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
    # As the CDK CLI runs it: cdk.json's app command, with CDK_OUTDIR. A process of its own,
    # as jsii's Node process takes its environment when it starts.
    command = json.loads((app / "cdk.json").read_text())["app"].split()
    assert command[0] == "python", command
    subprocess.run(
        [sys.executable, *command[1:]],
        cwd=app,
        env={**os.environ, "CDK_OUTDIR": str(app / "cdk.out")},
        check=True,
        timeout=600,
    )
    return app


def test_readme_local_run_fails_over_and_succeeds(
    readme_app: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = commands(section(ROOT / "README.md", "Run it locally"))
    assert len(lines) == 1 and lines[0].startswith("hetero-train run --local "), lines
    monkeypatch.chdir(readme_app)
    argv = shlex.split(lines[0])[1:]

    code, text = cli(argv)
    assert code == 0, text
    assert "execution status: SUCCEEDED" in text
    assert re.search(r"outcome: Failed \(CapacityError: .*\n(.*\n)*.*outcome: Completed", text)
    # Each attempt's job, with its exact request naming both instance groups.
    jobs = text.split("training job ")[1:]
    assert [job.split(":")[0] for job in jobs] == ["1", "2"], text
    assert all('"InstanceGroupNames"' in job and '"gpu"' in job for job in jobs), text


# --- the plan lines of docs/ ----------------------------------------------------------------


def test_docs_plan_lines_plan_the_example_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    lines = [
        line
        for page in sorted((ROOT / "docs").glob("*.md"))
        for line in commands(page.read_text())
        if re.match(r"(\.venv/bin/)?hetero-train plan ", line)
    ]
    assert lines, "docs/ shows hetero-train plan"
    for line in lines:
        argv = shlex.split(line.split("#")[0])[1:]
        code, text = cli(argv)
        assert code == 0, f"{line}\n{text}"
        request = json.loads(text)["request"] if "--json" in argv else None
        assert request is None or request["ResourceConfig"]["InstanceGroups"], line
        assert "ml.p4d.24xlarge" in text, line
