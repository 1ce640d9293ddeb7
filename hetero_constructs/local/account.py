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

While it serves it is steered, with nothing lost: ``deploy`` deploys new or changed stacks into
it (``deploy.update``), ``script`` scripts drills for the next attempts, ``interrupt``
reclaims a running job's spot instances. Another process does the same through the account's
control channel on its port (``control``; the client is ``steering.ServedAccount``).

What moto's own CloudFormation does here: each stack is registered with ``CreateStack`` (or
``UpdateStack``, redeployed) and its outputs, so ``DescribeStacks`` (and ``hetero-train run
STACK/CONSTRUCT``) finds its state machines. The resources themselves are created by the local
deployer (``deploy``): moto 5's CreateStack stops at a CDK template's bootstrap version
parameter (an SSM parameter), then at its first Lambda function (the code is fetched from the
bootstrap bucket the assets were never published to), and it runs no Lambda code nor delivers
service events anyway.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from hetero_constructs.local.cloud import LocalCloud
from hetero_constructs.local.control import Command, ControlError, ControlServer
from hetero_constructs.local.deploy.assets import AssetError
from hetero_constructs.local.deploy.create import definition_problems
from hetero_constructs.local.deploy.resolve import Resolver
from hetero_constructs.local.deploy.template import Template
from hetero_constructs.local.deploy.update import StackChange
from hetero_constructs.local.run import template_problem
from hetero_constructs.local.training import OnDemandJob, Outcome
from hetero_constructs.runs.execution import read_run
from hetero_constructs.runs.targets import (
    LOCAL_MACHINE_OUTPUT_PREFIX,
    TargetNotFound,
    machine_path,
    resolve_execution,
)

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
        self._server: ControlServer | None = None
        self._control = threading.Lock()  # one steering command at a time
        self._stop = threading.Event()
        self._clock: threading.Thread | None = None
        self._errors: list[BaseException] = []

    @property
    def region(self) -> str:
        return self.cloud.region

    @property
    def url(self) -> str:
        assert self._server is not None, "the account is served once entered"
        return self._server.url

    @property
    def notes(self) -> list[str]:
        """What the deployment could not simulate."""
        return self.cloud.notes

    def __enter__(self) -> LocalAccount:
        # Bound first: a port in use fails at once, before minutes of deploying.
        self._server = ControlServer(self.port, self._commands())
        try:
            self.cloud.__enter__()
        except BaseException:
            self._server.stop()
            raise
        try:
            for template in self.templates:
                self._deploy(template)
            self.cloud.training.script(self.outcomes, job_duration=self.job_duration)
            # Each request's access line would drown what the command prints.
            logging.getLogger("werkzeug").setLevel(logging.ERROR)
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
            self._server.stop()
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

    # -- steering it while it serves (also through its port: ``steering.ServedAccount``) ----

    def deploy(self, templates: Sequence[str | Path]) -> list[StackChange]:
        """Deploy new or changed synthesized stacks into the running account, as ``cdk
        deploy`` would: assets published into its S3, a changed stack updated in place
        (``deploy.update``), every run's history kept. ``ValueError`` names a template that
        is missing, no template, or holds a state machine definition moto's parser refuses
        (nothing of it is deployed then); ``AssetError`` a missing asset."""
        paths = [Path(template) for template in templates]
        for path in paths:
            problem = template_problem(path)
            if problem is not None:
                raise ValueError(problem)
        with self._control:
            return [self._deploy(path) for path in paths]

    def script(
        self, outcomes: Iterable[str | Outcome], *, job_duration: timedelta | None = None
    ) -> list[Outcome]:
        """How the next training-job attempts end, in creation order, each a drill (no code
        runs; shown as ``simulated``): replaces what was scripted; then later attempts end as
        the account's default (``simulate``, else for real). ``job_duration``: from now on, how
        long each drill runs. ``ValueError`` names an outcome that is not one."""
        parsed = [Outcome.parse(outcome) for outcome in outcomes]
        with self._control:
            self.cloud.training.script(parsed, job_duration=job_duration)
            return self.cloud.training.scripted()

    def scripted(self) -> list[Outcome]:
        """The outcomes scripted for the next attempts, not yet taken."""
        return self.cloud.training.scripted()

    def interrupt(self, job_or_run: str) -> tuple[str, str | None]:
        """Interrupt a running real job as a spot reclaim does (``LocalCloud.
        interrupt_training_job``): the job's name or ARN, or a run (execution name or ARN)
        whose current attempt runs. The job's name, and the run's ARN if a run was named.
        ``LookupError``: no such job or run; ``ValueError``: nothing of it runs for real."""
        target = job_or_run.strip()
        name = target.rsplit("/", 1)[-1] if ":training-job/" in target else target
        run = None
        with self._control:
            if name not in {attempt.name for attempt in self.cloud.training.attempts}:
                run = self._run_named(target)
                name = self._running_job(run)
            self.cloud.interrupt_training_job(name)
        return name, run

    def _run_named(self, target: str) -> str:
        try:
            return resolve_execution(target, stepfunctions=self.cloud.client("stepfunctions"))
        except TargetNotFound as error:
            running = ", ".join(self.cloud.training.running()) or "none"
            closest = f" Closest runs: {', '.join(error.candidates)}." if error.candidates else ""
            raise LookupError(
                f"No training job or run named {target!r} in this account (training jobs "
                f"running now: {running}).{closest} Fix: give a running job's name (hetero-train "
                "status RUN lists each attempt's), or a run's name or ARN."
            ) from None

    def _running_job(self, run: str) -> str:
        stepfunctions, sagemaker = (
            self.cloud.client("stepfunctions"),
            self.cloud.client("sagemaker"),
        )
        execution, jobs = read_run(stepfunctions, sagemaker, run)
        running = [job.name for job in jobs if job.status == "InProgress"]
        if not running:
            seen = ", ".join(f"{job.name} {job.status}" for job in jobs) or "none yet"
            raise ValueError(
                f"run {execution.name} has no running training job to interrupt (the run is "
                f"{execution.status}; its jobs: {seen}). Fix: interrupt it while an attempt "
                "is InProgress (hetero-train status shows it)."
            )
        return running[-1]

    def _deploy(self, template: Path) -> StackChange:
        # Checked first: a definition moto refuses would leave the stack half changed.
        loaded = Template.load(template)
        where = {"region": self.cloud.region, "account": self.cloud.account}
        resolver = Resolver(loaded.body, stack_name=loaded.stack_name, **where)
        problems = definition_problems(loaded.body, resolver)
        if problems:
            raise ValueError(f"template {str(template)!r}: " + "; ".join(problems))
        self.cloud.deploy(template)
        change = self.cloud.changes[-1]
        machines = [m.arn for m in self.cloud.stack_machines(change.stack)]
        self.stacks = {**self.stacks, change.stack: machines}
        self._register_stack(change.stack, template, new=change.new)
        return change

    # -- the control channel's commands (``control``; the client: ``steering``) -----------

    def _commands(self) -> dict[str, Command]:
        return {
            "GET account": lambda _: {
                "account": self.cloud.account,
                "region": self.region,
                "stacks": self.stacks,
                **self._script_answer(self.scripted()),
            },
            "POST deploy": self._deploy_command,
            "GET script": lambda _: self._script_answer(self.scripted()),
            "POST script": self._script_command,
            "DELETE script": lambda _: self._script_answer(self.script([])),
            "POST interrupt": self._interrupt_command,
        }

    def _deploy_command(self, body: Any) -> dict[str, Any]:
        templates = _strings(body, "templates", "the templates' paths")
        try:
            changes = self.deploy(templates)
        except ValueError as error:
            raise ControlError("InvalidTemplate", str(error)) from None
        except AssetError as error:
            raise ControlError("AssetError", str(error)) from None
        return {
            "stacks": [
                {**change.to_json(), "stateMachines": self.stacks.get(change.stack, [])}
                for change in changes
            ]
        }

    def _script_command(self, body: Any) -> dict[str, Any]:
        outcomes = _strings(body, "outcomes", "STATUS[:DETAIL] each")
        duration = body.get("jobDuration")
        seconds = None
        if duration is not None:
            try:
                if isinstance(duration, bool) or not 0 <= duration < math.inf:  # NaN, too
                    raise ValueError(duration)
                seconds = timedelta(seconds=duration)
            except (TypeError, ValueError, OverflowError):
                raise ControlError(
                    "InvalidRequest", f"jobDuration is seconds (a number >= 0), not {duration!r}"
                ) from None
        try:
            return self._script_answer(self.script(outcomes, job_duration=seconds))
        except ValueError as error:
            raise ControlError("InvalidOutcome", str(error)) from None

    def _script_answer(self, scripted: list[Outcome]) -> dict[str, Any]:
        otherwise = self.cloud.training.otherwise
        return {
            "next": [outcome_text(outcome) for outcome in scripted],
            "then": outcome_text(otherwise) if otherwise is not None else None,
        }

    def _interrupt_command(self, body: Any) -> dict[str, Any]:
        target = body.get("target") if isinstance(body, dict) else None
        if not isinstance(target, str) or not target.strip():
            raise ControlError(
                "InvalidRequest", "give the job's name or ARN, or a run's name or ARN, as target"
            )
        try:
            job, run = self.interrupt(target)
        except LookupError as error:
            raise ControlError("NotFound", str(error), 404) from None
        except OnDemandJob as error:
            raise ControlError("NotSpot", str(error), 409) from None
        except ValueError as error:
            raise ControlError("NotRunning", str(error), 409) from None
        return {"job": job, "run": run}

    # -- the stacks as CloudFormation knows them -------------------------------------------

    def _register_stack(self, name: str, template: Path, *, new: bool) -> None:
        body = json.loads(template.read_text())
        resolver = self.cloud.resolvers[-1]
        outputs = {}
        for key, output in (body.get("Outputs") or {}).items():
            value = resolver.resolve(output.get("Value"))
            outputs[key] = {"Value": str(value), "Description": output.get("Description", "")}
        # The stub holds no state machine: each is described by an output instead, so that
        # STACK/CONSTRUCT_ID of a user's own state machine resolves (``runs.targets``).
        for number, machine in enumerate(self.cloud.stack_machines(name)):
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
        cloudformation = self.cloud.client("cloudformation")
        put = cloudformation.create_stack if new else cloudformation.update_stack
        with warnings.catch_warnings():
            # moto creates nothing for the handle, and says so: that is the point.
            warnings.simplefilter("ignore", UserWarning)
            put(StackName=name, TemplateBody=json.dumps(stack))

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


def outcome_text(outcome: Outcome) -> str:
    """``STATUS[:DETAIL]``, as ``Outcome.parse`` reads it."""
    return outcome.status + (f":{outcome.detail}" if outcome.detail else "")


def _strings(body: Any, key: str, what: str) -> list[str]:
    values = body.get(key) if isinstance(body, dict) else None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ControlError("InvalidRequest", f"give {key} as a list of strings ({what})")
    return values


__all__ = ["DEFAULT_PORT", "LocalAccount", "outcome_text"]
