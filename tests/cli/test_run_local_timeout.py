"""A local run that outlives its timeout: the execution is stopped (a follow display sees its
end), no host's process outlives the local cloud, and the command line names ``--timeout``."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.cli import main
from hetero_constructs.local import LocalCloud
from hetero_constructs.local.results import Clients
from hetero_constructs.local.uploads import Upload
from tests.fixtures.example_app import Synthesized

DATA = Path(__file__).resolve().parents[2] / "examples" / "datasets" / "train"


def _children() -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{task}/children") as handle:
            found.update(int(child) for child in handle.read().split())
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads child processes from /proc")
def test_a_timed_out_run_is_stopped_and_leaves_no_process(example: Synthesized) -> None:
    before = _children()
    seen: list[str] = []

    def follow(clients: Clients, arn: str) -> None:
        stepfunctions = clients.stepfunctions
        while (status := stepfunctions.describe_execution(executionArn=arn)["status"]) == "RUNNING":
            threading.Event().wait(0.1)
        seen.append(status)

    with LocalCloud() as cloud:
        cloud.deploy(example.template, template_dir=example.outdir)
        Upload.parse(f"{DATA}=s3://example-training-data/datasets/train/").put(cloud.region)
        with pytest.raises(TimeoutError, match="did not end within 1 s"):
            cloud.run(None, timeout=1.0, follow=follow)
        assert seen == ["ABORTED"]  # the display saw the end instead of polling on
    # Every process the job started ends (a probe still running at the close ends on its own).
    deadline = time.monotonic() + 60
    while (left := _children() - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]


def test_the_command_line_names_the_option(
    example: Synthesized, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(self: LocalCloud, *args: Any, **kwargs: Any) -> Any:
        raise TimeoutError(f"the execution x did not end within {kwargs['timeout']:g} s")

    monkeypatch.setattr(LocalCloud, "run", run)
    template = example.outdir / "HeteroTrainingExample.template.json"
    code = main(["run", "--local", str(template), "--timeout", "45"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, err
    assert "did not end within 45 s. Fix: give it more time with --timeout SECONDS" in err, err
