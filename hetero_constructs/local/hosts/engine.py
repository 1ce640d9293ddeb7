"""One local training job: its hosts started as processes of this machine, watched to the end.

``LocalJob.start`` lays out every host (``layout``), fetches the code, channels and checkpoints
(``data``), starts each host's command (``launch``) through ``wrapper.py`` in a process group of
its own, and watches them in a thread: each line a host writes goes to ``on_line`` as it is
written; the job ends as SageMaker ends jobs:

- every host exits 0: ``Completed``, the model and output archives uploaded;
- a host exits non-zero: SIGTERM to the others, ``Failed`` with ``AlgorithmError: `` and that
  host's ``output/failure`` (its first 1,024 characters), else its exit code and last stderr
  lines;
- ``stop()`` (StopTrainingJob) or ``MaxRuntimeInSeconds``: SIGTERM to every process of every
  host, SIGKILL after ``grace`` seconds: ``Stopped`` (``MaxRuntimeExceeded``);
- whatever is left of a host's process group is killed once its command has exited, and
  ``kill()`` kills every group at once (the local cloud closing).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from hetero_constructs.local.hosts import data
from hetero_constructs.local.hosts.data import Checkpoints, JobSetupError, Storage
from hetero_constructs.local.hosts.launch import launch, missing_module_note
from hetero_constructs.local.hosts.layout import (
    CONTAINER_BASE,
    Cluster,
    Host,
    cluster,
    input_data_config,
    lay_out,
    toolkit_environment,
)
from hetero_constructs.local.hosts.wrapper import descendants
from hetero_constructs.runtime.config import BASE_DIR_ENV

WRAPPER = Path(__file__).with_name("wrapper.py")
#: Seconds between SIGTERM and SIGKILL (SageMaker waits up to 120; a local run less).
DEFAULT_GRACE = 10.0
#: Seconds between checkpoint uploads while the job runs.
CHECKPOINT_EVERY = 2.0
FAILURE_LIMIT = 1024
_STDERR_TAIL = 10
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")
_POLL = 0.05

#: ``(host, when, line)``: a line a host wrote.
LineSink = Callable[[str, datetime, str], None]
#: ``(secondary status, when, message)``: the job entered a stage.
StageSink = Callable[[str, datetime, str], None]

_mounts: tuple[bool, str] | None = None
_mounts_lock = threading.Lock()


def private_mounts() -> tuple[bool, str]:
    """Whether each host can get its own ``/opt/ml`` here (a private mount namespace, in a user
    namespace for a normal user), and what to tell the user about it. Probed once per process;
    nothing is created on this machine (where ``/opt/ml`` is missing, the namespace makes it)."""
    global _mounts
    with _mounts_lock:
        if _mounts is None:
            probe = subprocess.run(
                [sys.executable, str(WRAPPER), "--probe"],
                capture_output=True,
                text=True,
                check=False,
                timeout=30,
            )
            if probe.returncode == 0:
                how = "a mount namespace" if os.geteuid() == 0 else "a user and mount namespace"
                _mounts = (True, f"each host sees its own {CONTAINER_BASE} ({how})")
            else:
                why = probe.stderr.strip() or f"exit code {probe.returncode}"
                _mounts = (
                    False,
                    f"cannot give each host its own {CONTAINER_BASE} here ({why}): each host's "
                    f"files are in a folder of its own, named by ${BASE_DIR_ENV} and the SM_* "
                    f"variables; a script that opens {CONTAINER_BASE}/... literally will not "
                    "find them",
                )
        return _mounts


def _enter_mount(host: Host) -> list[str]:
    """The prefix that starts a process (an MPI rank of ``host``) in ``host``'s own /opt/ml."""
    return [sys.executable, str(WRAPPER), "--mount", str(host.base), "--exec", "--"]


def now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Ending:
    """How a job ended: its status, secondary status, reason, times and model."""

    status: str
    secondary: str
    reason: str | None
    trained_from: datetime | None  # when its hosts started (None: none ever did)
    ended: datetime
    model_artifacts: str | None = None


class _HostProcess:
    def __init__(self, host: Host, process: subprocess.Popen[bytes]) -> None:
        self.host = host
        self.process = process
        self.code: int | None = None
        self.stderr: deque[str] = deque(maxlen=_STDERR_TAIL)
        self.missing: str | None = None  # the first module its script could not import
        self.readers: list[threading.Thread] = []

    def signal(self, number: int) -> list[int]:
        """``number`` to the host's process group; SIGKILL also to every process below its
        wrapper (a launcher's workers have groups of their own). The pids it killed."""
        below = descendants(self.process.pid) if number == signal.SIGKILL else []
        for pid in below:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, number)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, number)
        return below


class LocalJob:
    """One training job run on this machine (``start``, then watch ``finished``)."""

    def __init__(
        self,
        name: str,
        request: Mapping[str, Any],
        storage: Storage,
        root: Path,
        *,
        on_line: LineSink,
        on_stage: StageSink,
        python: str | None = None,
        grace: float = DEFAULT_GRACE,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.environment = dict(environment or {})
        self.request = dict(request)
        self.storage = storage
        self.root = root
        self.python = python or sys.executable
        self.grace = grace
        self.notes: list[str] = []
        self.ending: Ending | None = None
        self.finished = threading.Event()
        self._on_line = on_line
        self._on_stage = on_stage
        self._stop_reason: str | None = None
        self._stop_at: float | None = None
        self._lock = threading.Lock()
        self._hosts: list[_HostProcess] = []
        self._thread = threading.Thread(target=self._run, name=f"local-job-{name}", daemon=True)

    # -- steering ----------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self, secondary: str = "Stopped") -> None:
        """StopTrainingJob: SIGTERM to every host now, SIGKILL after the grace period."""
        with self._lock:
            if self._stop_reason is None:
                self._stop_reason = secondary
                self._stop_at = time.monotonic()
                for host in self._hosts:
                    host.signal(signal.SIGTERM)

    def kill(self, secondary: str = "Stopped") -> None:
        """Every process of every host killed at once (the local cloud is closing; a spot
        reclaim: ``secondary`` ``Interrupted``, no artifacts are uploaded)."""
        with self._lock:
            self._stop_reason = self._stop_reason or secondary
            self._stop_at = time.monotonic() - self.grace
            for host in self._hosts:
                host.signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    def pids(self) -> list[int]:
        """The process groups of the hosts (one per host)."""
        with self._lock:
            return [host.process.pid for host in self._hosts]

    # -- the job's life ----------------------------------------------------------------

    def _run(self) -> None:
        trained_from: datetime | None = None
        try:
            self._on_stage("Downloading", now(), "Downloading input data")
            hosts = self._prepare()
            if self._stop_reason is not None:
                raise _Stopped
            trained_from = now()
            self._on_stage(
                "Training", trained_from, "Training image download completed. Training in progress."
            )
            self._launch(hosts)
            failed = self._watch()
            self.ending = self._end(hosts, failed, trained_from)
        except _Stopped:
            self.ending = Ending(
                "Stopped", self._stop_reason or "Stopped", None, trained_from, now()
            )
        except JobSetupError as error:
            self.ending = Ending(
                "Failed", "Failed", str(error)[:FAILURE_LIMIT], trained_from, now()
            )
        except Exception as error:  # a fault of ours must end the job, not hang it
            reason = f"InternalServerError: local run: {type(error).__name__}: {error}"
            self.ending = Ending("Failed", "Failed", reason[:FAILURE_LIMIT], trained_from, now())
        finally:
            self.kill_all()
            self.finished.set()

    def _prepare(self) -> Cluster:
        hyperparameters = {
            str(k): str(v) for k, v in (self.request.get("HyperParameters") or {}).items()
        }
        self._cluster = hosts = cluster(self.request, self.root)
        channels = list(self.request.get("InputDataConfig") or [])
        for host in hosts.hosts:
            mine = [c for c in channels if host in data.channel_hosts(c, hosts)]
            lay_out(host, hosts, hyperparameters, input_data_config(mine))
        mounted, _ = private_mounts()
        self._launch_plan = launch(
            hosts, hyperparameters, self.python, _enter_mount if mounted else None
        )
        self.notes.extend(self._launch_plan.notes)
        self.notes.extend(data.download_channels(self.storage, channels, hosts))
        data.unpack_code(self.storage, data.submit_directory(hyperparameters), hosts.hosts)
        self._checkpoints = Checkpoints(
            self.storage, self.request.get("CheckpointConfig"), hosts.hosts
        )
        self._checkpoints.restore()
        self._hyperparameters = hyperparameters
        return hosts

    def _environment(self, host: Host, mounted: bool) -> dict[str, str]:
        base = CONTAINER_BASE if mounted else str(host.base)
        channels = (host.base / "input" / "config" / "inputdataconfig.json").read_text()
        environment = dict(os.environ)
        environment.update(
            toolkit_environment(
                host, self._cluster, self._hyperparameters, json.loads(channels), base
            )
        )
        environment.update(self._launch_plan.environment)
        environment.update(self.environment)
        environment.update(
            {str(k): str(v) for k, v in (self.request.get("Environment") or {}).items()}
        )
        code = f"{base}/code"
        path = environment.get("PYTHONPATH")
        environment.update(
            {
                "PYTHONPATH": f"{code}{os.pathsep}{path}" if path else code,
                "PYTHONUNBUFFERED": "1",
                "TRAINING_JOB_NAME": self.name,
                "CURRENT_HOST": host.name,
            }
        )
        if not mounted:
            environment[BASE_DIR_ENV] = str(host.base)
        else:
            environment.pop(BASE_DIR_ENV, None)
        return environment

    def _launch(self, hosts: Cluster) -> None:
        mounted, _ = private_mounts()
        for host in hosts.hosts:
            command = self._launch_plan.commands[host.name]
            wrapper = [sys.executable, str(WRAPPER)]
            if mounted:
                wrapper += ["--mount", str(host.base)]
            at = now()
            self._on_line(host.name, at, f"SM_CURRENT_INSTANCE_GROUP={host.group}")
            self._on_line(
                host.name, at, "Invoking script with the following command: " + " ".join(command)
            )
            with self._lock:
                if self._stop_reason is not None:
                    raise _Stopped
                process = subprocess.Popen(
                    [*wrapper, "--", *command],
                    cwd=str(host.base / "code"),
                    env=self._environment(host, mounted),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
                running = _HostProcess(host, process)
                self._hosts.append(running)
            for stream, is_error in ((process.stdout, False), (process.stderr, True)):
                reader = threading.Thread(
                    target=self._read, args=(running, stream, is_error), daemon=True
                )
                reader.start()
                running.readers.append(reader)

    def _read(self, host: _HostProcess, stream: IO[bytes] | None, is_error: bool) -> None:
        assert stream is not None
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if is_error:
                host.stderr.append(line)
                # Seen as it streams: mpirun's own lines may push it out of the tail.
                missing = _MISSING_MODULE.search(line)
                if missing and host.missing is None:
                    host.missing = missing.group(1)
            self._on_line(host.host.name, now(), line)
        stream.close()

    def _watch(self) -> _HostProcess | None:
        """Wait for every host; the first that failed (None: none did, or the job stopped)."""
        limit = (self.request.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
        deadline = time.monotonic() + float(limit) if limit else None
        failed: _HostProcess | None = None
        last_upload = time.monotonic()
        while True:
            with self._lock:
                for host in self._hosts:
                    if host.code is None:
                        host.code = host.process.poll()
                        if host.code is not None:
                            host.signal(signal.SIGKILL)  # what the command left behind
                            if host.code != 0 and failed is None and self._stop_reason is None:
                                failed = host
                                for other in self._hosts:
                                    if other.code is None:
                                        other.signal(signal.SIGTERM)
                                self._stop_at = time.monotonic()
                running = [host for host in self._hosts if host.code is None]
                stop_at = self._stop_at
            if not running:
                break
            moment = time.monotonic()
            if deadline is not None and moment >= deadline and self._stop_reason is None:
                self.stop("MaxRuntimeExceeded")
            elif stop_at is not None and moment >= stop_at + self.grace:
                for host in running:
                    host.signal(signal.SIGKILL)
            if moment - last_upload >= CHECKPOINT_EVERY:
                self._checkpoints.upload()
                last_upload = moment
            time.sleep(_POLL)
        for host in self._hosts:
            for reader in host.readers:
                reader.join(timeout=5)
        self._checkpoints.upload()
        return failed

    def _end(self, hosts: Cluster, failed: _HostProcess | None, trained_from: datetime) -> Ending:
        output = str((self.request.get("OutputDataConfig") or {}).get("S3OutputPath") or "")
        if self._stop_reason == "Interrupted":  # the instances are gone: nothing is uploaded
            return Ending("Stopped", self._stop_reason, None, trained_from, now())
        if self._stop_reason is not None:
            model = self._artifacts(hosts, output)
            return Ending("Stopped", self._stop_reason, None, trained_from, now(), model)
        if failed is not None:
            return Ending("Failed", "Failed", _failure(failed), trained_from, now())
        self._on_stage("Uploading", now(), "Uploading generated training model")
        model = self._artifacts(hosts, output)
        return Ending("Completed", "Completed", None, trained_from, now(), model)

    def _artifacts(self, hosts: Cluster, output: str) -> str | None:
        if not output:
            return None
        return data.upload_artifacts(self.storage, output, self.name, hosts.hosts)

    def kill_all(self) -> None:
        """SIGKILL to every host's process group, and wait until none of its processes runs
        (nothing outlives the job)."""
        with self._lock:
            groups = [host.process.pid for host in self._hosts]
            killed: list[int] = []
            for host in self._hosts:
                killed += host.signal(signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    host.process.wait(timeout=5)
        deadline = time.monotonic() + 5
        while _running_in(groups, killed) and time.monotonic() < deadline:
            time.sleep(_POLL)


def _running_in(groups: list[int], pids: list[int]) -> bool:
    """Whether a process of these process groups, or one of ``pids``, still runs (zombies do
    not: they wait for a parent to reap them). Linux's /proc; elsewhere, a signal-0 probe of
    each group."""
    if not groups and not pids:
        return False
    proc = Path("/proc")
    if not proc.is_dir():
        return any(_group_exists(group) for group in groups)
    wanted = set(groups)
    others = set(pids)
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and (int(fields[2]) in wanted or int(entry.name) in others):
            return True
    return False


def _group_exists(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class _Stopped(Exception):
    """The job was stopped before its hosts started."""


def _failure(host: _HostProcess) -> str:
    path = host.host.base / "output" / "failure"
    with contextlib.suppress(OSError):
        text = path.read_text(errors="replace")
        if text.strip():
            return "AlgorithmError: " + text[:FAILURE_LIMIT]
    code = host.code or 0
    how = f"was killed by signal {code - 128}" if code > 128 else f"exited with code {code}"
    tail = "\n".join(host.stderr)
    reason = f"AlgorithmError: {host.host.name}: the script {how}"
    if host.missing is not None:
        reason += f" ({missing_module_note(host.missing)})"
    if tail:
        reason += "; its last lines on stderr:\n"
        reason += tail[-max(0, FAILURE_LIMIT - len(reason)) :]
    return reason


__all__ = [
    "DEFAULT_GRACE",
    "Ending",
    "LineSink",
    "LocalJob",
    "StageSink",
    "private_mounts",
]
