"""Steering a running served account from another process: ``ServedAccount``.

``hetero-train local serve`` (or a ``LocalAccount``) answers its control channel
(``control``) on the port it serves AWS on; this client talks to it with the standard library
only::

    from hetero_constructs.local.steering import ServedAccount

    account = ServedAccount()  # AWS_ENDPOINT_URL, as any AWS client of the account
    account.deploy(["cdk.out/MyStack.template.json"])  # new or changed stacks, runs kept
    account.script(["Failed:CapacityError: Unable to provision", "Completed"])  # drills
    account.interrupt("my-run")  # its running job, as a spot reclaim interrupts it

Every refusal is a ``SteeringError`` whose message says what is wrong and the fix;
``NotServedAccount`` when nothing, or something else, answers at the endpoint.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetero_constructs.local.control import CONTROL_PREFIX, SERVICE
from hetero_constructs.local.deploy.update import StackChange

_FIX = (
    "Fix: point --endpoint-url (or AWS_ENDPOINT_URL) at the URL `hetero-train local serve` "
    "printed (serving on http://127.0.0.1:PORT)."
)


class SteeringError(RuntimeError):
    """The served account refused a command: ``name`` (e.g. ``NotRunning``) and why."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class NotServedAccount(SteeringError):
    """Nothing answers at the endpoint, or what answers is no served local account."""

    def __init__(self, message: str) -> None:
        super().__init__("NotServedAccount", message)


@dataclass(frozen=True)
class DeployedStack:
    """One stack a deploy created or updated: what changed, and its state machines' ARNs."""

    change: StackChange
    state_machines: list[str]


@dataclass(frozen=True)
class Script:
    """The outcomes scripted for the next training-job attempts (drills: each runs no code and
    is labelled ``simulated``), in creation order; ``then``: how later attempts end (None:
    they run for real)."""

    next: list[str]
    then: str | None

    def lines(self) -> list[str]:
        """What a person reads (``hetero-train local script``)."""
        after = "run for real" if self.then is None else f"are drills that end {self.then}"
        if not self.next:
            return [f"nothing scripted: the next training-job attempts {after}"]
        return [
            f"the next {len(self.next)} training-job attempt(s) are drills (simulated: no code "
            "runs), in creation order:",
            *(f"  {number}. {outcome}" for number, outcome in enumerate(self.next, 1)),
            f"then later attempts {after}",
        ]


@dataclass(frozen=True)
class Interrupted:
    """The job a spot reclaim interrupted (it restarts on fresh hosts), and its run if named."""

    job: str
    run: str | None


def endpoint_from_environment() -> str | None:
    """The endpoint AWS clients of the account use: ``AWS_ENDPOINT_URL``."""
    return os.environ.get("AWS_ENDPOINT_URL") or None


class ServedAccount:
    """A served local account at ``endpoint_url`` (default: ``AWS_ENDPOINT_URL``)."""

    def __init__(self, endpoint_url: str | None = None, *, timeout: float = 600.0) -> None:
        url = endpoint_url or endpoint_from_environment()
        if not url:
            raise NotServedAccount(
                "No endpoint of a served account is given. Fix: pass --endpoint-url (Python: "
                "ServedAccount(endpoint_url=...)) or set AWS_ENDPOINT_URL to the URL "
                "`hetero-train local serve` printed."
            )
        self.endpoint_url = url.rstrip("/")
        self.timeout = timeout

    def describe(self) -> dict[str, Any]:
        """The account: ``service``, ``account``, ``region``, ``stacks`` (name -> state
        machines' ARNs), ``script`` (what ``scripted`` answers)."""
        return self._call("GET", "account")

    def deploy(self, templates: Sequence[str | os.PathLike[str]]) -> list[DeployedStack]:
        """Deploy new or changed synthesized stacks (``cdk.out/STACK.template.json``) into the
        running account, keeping every run; their assets are published into its S3 first."""
        paths = [str(Path(template).resolve()) for template in templates]
        answer = self._call("POST", "deploy", {"templates": paths})
        return [
            DeployedStack(StackChange.from_json(s), list(s.get("stateMachines") or []))
            for s in answer["stacks"]
        ]

    def script(self, outcomes: Iterable[str], *, job_duration: float | None = None) -> Script:
        """How the next training-job attempts end, as drills (``STATUS[:DETAIL]`` each, as
        ``--outcome`` takes them); replaces what was scripted. ``job_duration``: from now on, how
        long each drill runs, in seconds (default: as it was)."""
        body: dict[str, Any] = {"outcomes": list(outcomes)}
        if job_duration is not None:
            body["jobDuration"] = job_duration
        return _script(self._call("POST", "script", body))

    def scripted(self) -> Script:
        """What is scripted now."""
        return _script(self._call("GET", "script"))

    def clear_script(self) -> Script:
        """Nothing scripted any more: the next attempts end as the account's default."""
        return _script(self._call("DELETE", "script"))

    def interrupt(self, job_or_run: str) -> Interrupted:
        """Interrupt a running real training job as a spot reclaim does: every host killed at
        once, then the same job started again on fresh hosts with its checkpoints restored.
        ``job_or_run``: the job's name or ARN, or a run (execution name or ARN) whose current
        attempt is running."""
        answer = self._call("POST", "interrupt", {"target": job_or_run})
        return Interrupted(str(answer["job"]), answer.get("run"))

    def _call(self, method: str, command: str, body: Any = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.endpoint_url + CONTROL_PREFIX + command,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"} if data is not None else {},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return _answer(self.endpoint_url, response.read())
        except urllib.error.HTTPError as error:
            answer = _answer(self.endpoint_url, error.read())
            raise SteeringError(str(answer["error"]), str(answer["message"])) from None
        except urllib.error.URLError as error:
            raise NotServedAccount(
                f"Nothing answers at {self.endpoint_url} ({error.reason}). Fix: start "
                "`hetero-train local serve TEMPLATE...`, or point --endpoint-url (or "
                "AWS_ENDPOINT_URL) at the URL it printed."
            ) from None
        except (TimeoutError, ConnectionError) as error:
            raise NotServedAccount(
                f"{self.endpoint_url} did not answer ({error}). {_FIX}"
            ) from None


def _answer(endpoint: str, raw: bytes) -> dict[str, Any]:
    """A control answer, or ``NotServedAccount`` when what answered is something else."""
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or answer.get("service") != SERVICE:
        raise NotServedAccount(
            f"{endpoint} answers, but is no served hetero-constructs local account (moto's "
            f"own server, or another service?). {_FIX}"
        )
    return answer


def _script(answer: dict[str, Any]) -> Script:
    return Script([str(o) for o in answer.get("next") or []], answer.get("then"))


__all__ = [
    "DeployedStack",
    "Interrupted",
    "NotServedAccount",
    "Script",
    "ServedAccount",
    "SteeringError",
    "endpoint_from_environment",
]
