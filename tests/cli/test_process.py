"""The real ``hetero-train`` process against moto's threaded server (``--endpoint-url``), and
``run --follow`` on a real pseudo-terminal, read through a terminal emulator."""

from __future__ import annotations

import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hetero_constructs.cli.aws import AwsOptions
from hetero_constructs.contract.naming import preview_job_name
from tests.fixtures.fake_stack import (
    CONSTRUCT_PATH,
    MOTO_CONFIG,
    PREFIX,
    REGION,
    FakeStack,
    Scenario,
    moto_gaps,
)

SCRIPT = Path(sys.executable).parent / "hetero-train"
COLUMNS, ROWS = 140, 60


def _post(url: str, body: Any) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "json"}
    )
    with urllib.request.urlopen(request, timeout=60):
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    moto_server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto_server.start()
    host, port = moto_server.get_host_and_port()
    url = f"http://{host}:{port}"
    # moto's interpreter calls the other services (Lambda) on the server at MOTO_PORT.
    saved_port = os.environ.get("MOTO_PORT")
    os.environ["MOTO_PORT"] = str(port)
    yield url
    _post(f"{url}/moto-api/config", {"stepfunctions": {"execute_state_machine": False}})
    moto_server.stop()
    if saved_port is None:
        del os.environ["MOTO_PORT"]
    else:
        os.environ["MOTO_PORT"] = saved_port


@pytest.fixture
def served(server: str, aws_env: Any) -> Iterator[FakeStack]:
    _post(f"{server}/moto-api/reset", {})
    _post(f"{server}/moto-api/config", MOTO_CONFIG)
    with moto_gaps():
        stack = FakeStack(AwsOptions().session(), endpoint_url=server)
        stack.deploy()
        yield stack


def environment(server: str) -> dict[str, str]:
    return {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
        "HETERO_TRAIN_POLL_INTERVAL": "0.05",
    }


def hetero_train(server: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args, "--endpoint-url", server],
        capture_output=True,
        text=True,
        env=environment(server),
        timeout=60,
        check=False,
    )


def test_the_cli_process_runs_follows_and_reports_a_failed_run(
    served: FakeStack, server: str
) -> None:
    arn = served.execution_arn("proc-1")
    scenario = Scenario(served, arn, outcome="Failed", reason="CapacityError: no ml.p4d.24xlarge")
    driver = threading.Thread(target=scenario.play)
    driver.start()
    result = hetero_train(server, "run", CONSTRUCT_PATH, "--name", "proc-1", "--follow")
    driver.join()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "failure reason   CapacityError: no ml.p4d.24xlarge" in result.stdout
    assert "\x1b[" not in result.stdout  # no colours in a pipe

    status = hetero_train(server, "status", "proc-1", "--json")
    summary = json.loads(status.stdout)
    assert status.returncode == 0 and summary["status"] == "FAILED"
    assert summary["jobs"][0]["name"] == preview_job_name(PREFIX, "proc-1")

    logs = hetero_train(server, "logs", arn, "--json", "--group", "gpu")
    records = [json.loads(line) for line in logs.stdout.splitlines()]
    assert logs.returncode == 0 and {r["host"] for r in records} == {"algo-1", "algo-3"}

    listed = hetero_train(server, "list", PREFIX, "--json")
    assert [r["name"] for r in json.loads(listed.stdout)["runs"]] == ["proc-1"]


def test_the_cli_process_stops_a_run(served: FakeStack, server: str) -> None:
    started = hetero_train(server, "run", PREFIX, "--name", "proc-2", "--no-follow", "--json")
    arn = json.loads(started.stdout)["executionArn"]
    scenario = Scenario(served, arn, outcome=None)
    scenario.play()
    stopped = hetero_train(server, "stop", "proc-2", "--json")
    assert stopped.returncode == 0, stopped.stderr
    result = json.loads(stopped.stdout)
    assert result["stoppedTrainingJobs"] == [scenario.job] and result["status"] == "ABORTED"
    job = served.sagemaker.describe_training_job(TrainingJobName=scenario.job)
    assert job["TrainingJobStatus"] == "Stopping"


def test_bad_input_in_the_cli_process_starts_nothing(served: FakeStack, server: str) -> None:
    result = hetero_train(
        server, "run", PREFIX, "--input", '{"hyperparameters": []}', "--no-follow"
    )
    assert result.returncode == 1
    assert "[OVERRIDE-TYPE] execution input.hyperparameters" in result.stdout
    listed = served.stepfunctions.list_executions(stateMachineArn=served.state_machine_arn)
    assert listed["executions"] == []


def _read_terminal(fd: int, process: subprocess.Popen[bytes], deadline: float) -> bytes:
    chunks = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the terminal closed: the process has exited
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    return b"".join(chunks)


def test_run_follow_on_a_terminal_shows_the_run_to_its_end(served: FakeStack, server: str) -> None:
    import pyte

    arn = served.execution_arn("tty-1")
    master, slave = pty.openpty()
    fcntl_size = struct.pack("HHHH", ROWS, COLUMNS, 0, 0)
    import fcntl

    fcntl.ioctl(slave, termios.TIOCSWINSZ, fcntl_size)
    process = subprocess.Popen(
        [str(SCRIPT), "run", CONSTRUCT_PATH, "--name", "tty-1", "--endpoint-url", server],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**environment(server), "TERM": "xterm-256color", "COLUMNS": str(COLUMNS)},
    )
    os.close(slave)
    scenario = Scenario(served, arn)
    driver = threading.Thread(target=scenario.play)
    driver.start()
    output = _read_terminal(master, process, time.monotonic() + 120)
    driver.join()
    assert process.wait(timeout=60) == 0, output.decode(errors="replace")
    os.close(master)

    screen = pyte.Screen(COLUMNS, ROWS)
    pyte.ByteStream(screen).feed(output)
    shown = [line.rstrip() for line in screen.display]
    text = "\n".join(shown)
    job = preview_job_name(PREFIX, "tty-1")
    # Following is the default on a terminal: states, job, transitions, labelled logs, the end.
    assert "execution succeeded" in text
    assert "job       Training: Training in progress." in text
    assert "[algo-2 data] algo-2 step 2" in text and "[algo-3 gpu] algo-3 step 2" in text
    end = next(i for i, line in enumerate(shown) if line.startswith("Run tty-1 SUCCEEDED"))
    assert shown[end + 1].split() == ["job", job, "(Completed)"]
    assert shown[end + 2].split()[:2] == ["ran", "on"]  # each group's type and count
    assert shown[end + 3].split() == [
        "model",
        "artifacts",
        f"s3://bucket/output/{job}/output/model.tar.gz",
    ]
    # The live progress line was transient: nothing of it is left below the final screen.
    assert not any("elapsed" in line for line in shown)
    # Colours on a terminal: the final status is green.
    row = screen.buffer[end]
    status_column = shown[end].index("SUCCEEDED")
    assert row[status_column].fg == "green" and row[status_column].bold
