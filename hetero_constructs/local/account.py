"""A local AWS account on 127.0.0.1: synthesized stacks deployed and served by moto, with no
AWS account.

``LocalAccount`` deploys the templates into a ``LocalCloud`` (moto in-process, its gaps filled)
and serves that same moto over HTTP, bound to 127.0.0.1 only, so any AWS client pointed at it
(``AWS_ENDPOINT_URL``) works as against AWS: ``hetero-train run / status / logs / stop / list``,
the ``TrainingRun`` API, a user's own boto3 code. A clock thread does what AWS does between
calls: delivers the events the services send to the stacks' EventBridge rules (running their
Lambdas in-process), fires the scheduled rules (the reconciler) every ``reconcile_every``
seconds, and ends each training job: a real one (the default) as its hosts end, running the
job's own code on this machine; a drill (``outcomes``, in creation order, then ``simulate``)
through its stages over ``job_duration`` to the outcome scripted for it.

What moto's own CloudFormation does here: each stack is registered with ``CreateStack`` and its
outputs, so ``DescribeStacks`` (and ``hetero-train run STACK/CONSTRUCT``) finds its state
machines. The resources themselves are created by the local deployer (``deploy``): moto 5's
CreateStack stops at a CDK template's bootstrap version parameter (an SSM parameter), then at
its first Lambda function (the code is fetched from the bootstrap bucket the assets were never
published to), and it runs no Lambda code nor delivers service events anyway.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from hetero_constructs.local.cloud import LocalCloud
from hetero_constructs.local.training import Outcome
from hetero_constructs.runs.targets import LOCAL_MACHINE_OUTPUT_PREFIX, machine_path

DEFAULT_PORT = 5055
_TICK = 0.1


class LocalAccount:
    """Synthesized stacks served on ``http://127.0.0.1:PORT``. Use as a context manager.

    ``port`` 0 picks a free one (``url`` says which). ``job_duration``: how long each simulated
    training job (a drill) runs, in wall-clock time; ``simulate``: how every attempt beyond the
    scripted ``outcomes`` ends, as a drill (None: they run for real); ``python``: the Python
    that runs the entry points.
    """

    def __init__(
        self,
        templates: Sequence[str | Path],
        *,
        port: int = DEFAULT_PORT,
        region: str | None = None,
        outcomes: Iterable[str | Outcome] = (),
        job_duration: timedelta = timedelta(seconds=20),
        reconcile_every: float = 300.0,
        simulate: str | Outcome | None = None,
        python: str | None = None,
    ) -> None:
        self.templates = [Path(t) for t in templates]
        self.port = port
        self.cloud = LocalCloud(region, simulate=simulate, python=python)
        self.outcomes = [Outcome.parse(outcome) for outcome in outcomes]
        self.job_duration = job_duration
        self.reconcile_every = reconcile_every
        self.stacks: dict[str, list[str]] = {}  # stack name -> its state machines' ARNs
        self._server: Any = None
        self._stop = threading.Event()
        self._clock: threading.Thread | None = None
        self._errors: list[BaseException] = []

    @property
    def region(self) -> str:
        return self.cloud.region

    @property
    def url(self) -> str:
        assert self._server is not None, "the account is served once entered"
        host, port = self._server.get_host_and_port()
        return f"http://{host}:{port}"

    @property
    def notes(self) -> list[str]:
        """What the deployment could not simulate."""
        return self.cloud.notes

    def __enter__(self) -> LocalAccount:
        from moto.server import ThreadedMotoServer

        _check_port(self.port)  # at once: the server's own thread would only print the error
        self.cloud.__enter__()
        try:
            for template in self.templates:
                known = len(self.cloud.deployed)
                self.cloud.deploy(template)
                name = template.name.split(".")[0]
                self.stacks[name] = [m.arn for m in self.cloud.deployed[known:]]
                self._register_stack(name, template)
            self.cloud.training.script(self.outcomes, job_duration=self.job_duration)
            # Each request's access line would drown what the command prints.
            logging.getLogger("werkzeug").setLevel(logging.ERROR)
            self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
            self._server.start()
            # A host's AWS clients reach this account, as a container's reach AWS.
            self.cloud.training.real.environment.update(
                {
                    "AWS_ENDPOINT_URL": self.url,
                    "AWS_DEFAULT_REGION": self.region,
                    "AWS_ACCESS_KEY_ID": "testing",
                    "AWS_SECRET_ACCESS_KEY": "testing",
                }
            )
        except BaseException:
            self.cloud.__exit__(None, None, None)
            raise
        self._clock = threading.Thread(target=self._run_clock, name="local-account", daemon=True)
        self._clock.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._clock is not None:
            self._clock.join(timeout=10)
        if self._server is not None:
            self._server.stop()
        self.cloud.__exit__(kind, error, trace)

    def wait(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set (or the clock fails: its error is raised)."""
        while not stop.wait(0.2):
            if self._errors:
                raise self._errors[0]

    # -- the stacks as CloudFormation knows them -------------------------------------------

    def _register_stack(self, name: str, template: Path) -> None:
        body = json.loads(template.read_text())
        resolver = self.cloud.resolvers[-1]
        outputs = {}
        for key, output in (body.get("Outputs") or {}).items():
            value = resolver.resolve(output.get("Value"))
            outputs[key] = {"Value": str(value), "Description": output.get("Description", "")}
        # The stub holds no state machine: each is described by an output instead, so that
        # STACK/CONSTRUCT_ID of a user's own state machine resolves (``runs.targets``).
        for number, machine in enumerate(
            m for m in self.cloud.deployed if m.arn in self.stacks[name]
        ):
            resource = body["Resources"][machine.logical_id]
            path = f"{name}/{machine_path(resource, machine.logical_id, name)}"
            outputs[f"HeteroLocalStateMachine{number}"] = {
                "Value": machine.arn,
                "Description": f"{LOCAL_MACHINE_OUTPUT_PREFIX}{path}",
            }
        stack = {
            "Resources": {"Deployed": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
            "Outputs": outputs,
        }
        with warnings.catch_warnings():
            # moto creates nothing for the handle, and says so: that is the point.
            warnings.simplefilter("ignore", UserWarning)
            self.cloud.client("cloudformation").create_stack(
                StackName=name, TemplateBody=json.dumps(stack)
            )

    # -- what AWS does between calls --------------------------------------------------------

    def _run_clock(self) -> None:
        seen: set[str] = set()
        last_fire = time.monotonic()
        while not self._stop.wait(_TICK):
            try:
                self.cloud.advance(seen)
                if time.monotonic() - last_fire >= self.reconcile_every:
                    self.cloud.fire_schedules()
                    last_fire = time.monotonic()
            except Exception as error:  # a clock that dies silently would hang every run
                self._errors.append(error)
                return


def _check_port(port: int) -> None:
    """``OSError`` when 127.0.0.1:``port`` cannot be listened on (another server holds it).
    The probe binds as the server will (``SO_REUSEADDR``), so a port in TIME_WAIT passes."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))


__all__ = ["DEFAULT_PORT", "LocalAccount"]
