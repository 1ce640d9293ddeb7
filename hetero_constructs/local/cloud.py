"""Run a synthesized stack's state machines locally, with no AWS account.

``LocalCloud`` is moto in-process with its gaps filled (``moto_gaps``, ``training``): it deploys
any synthesized template (``deploy``), runs the template's Python Lambdas in-process from their
assets (``lambdas``), delivers the events AWS services send to the template's EventBridge rules
(``events``), runs each training job's code on this machine (``real_jobs``) or ends it as a run
scripts it (a drill), and injects faults (``faults``)::

    with LocalCloud() as cloud:
        cloud.deploy("cdk.out/MyStack.template.json")
        result = cloud.run(cloud.state_machine(), {"hyperparameters": {"epochs": 1}},
                           outcomes=["Failed:CapacityError: ...", "Completed"])

It knows nothing of any handler's internals: a job ends when its run's code is idle (no Lambda
running, no event in flight), as a real job outlives the calls that started it; everything else
follows from the template. Its command line is ``hetero-train run --local``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from hetero_constructs.local import moto_gaps, moto_targets
from hetero_constructs.local.delivery import invoke_target, send
from hetero_constructs.local.deploy.assets import (
    Environment,
    FileAsset,
    publish_template_assets,
)
from hetero_constructs.local.deploy.create import Deployer, StateMachine, scratch_folder
from hetero_constructs.local.deploy.resolve import (
    DEFAULT_ACCOUNT,
    Resolver,
    detect_account,
    detect_region,
)
from hetero_constructs.local.deploy.template import Template
from hetero_constructs.local.deploy.update import Redeployer, StackChange, new_stack
from hetero_constructs.local.events import EventBus, Target
from hetero_constructs.local.execution_events import (
    EXECUTION_EVENT_SOURCE,
    EXECUTION_EVENT_TYPE,
    execution_status_event,
)
from hetero_constructs.local.faults import Faults
from hetero_constructs.local.lambdas import Lambdas, install_invoke
from hetero_constructs.local.patching import Patches, environment_variable
from hetero_constructs.local.results import ExecutionResult, Follow, give_up, start_follow
from hetero_constructs.local.training import Outcome, TrainingJobs
from hetero_constructs.runs.targets import Entry, deployed_state_machine, template_entries

TERMINAL_EXECUTION = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
_TICK = 0.02


class LocalCloud:
    """moto in-process, filled in where it is thinner than AWS. Use as a context manager.

    ``UnsupportedMoto`` (at once): the installed moto moved what the local account replaces
    or relies on (``moto_targets``); nothing is replaced then.

    ``region``: the region of the deployment; None takes it from the first template deployed
    (its cdk.out manifest, else its literal ARNs, else us-west-2). Each training job a run
    creates runs for real (every host's script as processes of this machine, ``hosts``) unless
    its end is scripted (``outcomes``): ``simulate`` scripts every attempt beyond those (a drill
    that runs no code), ``python`` runs the entry points (default: this Python).
    """

    def __init__(
        self,
        region: str | None = None,
        *,
        simulate: str | Outcome | None = None,
        python: str | None = None,
    ) -> None:
        moto_targets.require()
        self.region = region or "us-west-2"
        self._region_fixed = region is not None
        #: Retry waits (capacity retries wait minutes) are recorded and slept at most 0.05 s.
        self.retry_waits = moto_gaps.RetryWaits(cap=0.05)
        self.account = DEFAULT_ACCOUNT
        self.state_machines: list[str] = []  # ARNs, in template order, once deployed
        self.definitions: dict[str, Any] = {}  # the definitions as deployed, by ARN
        self.deployed: list[StateMachine] = []
        #: The names of each deployed stack (``runs.targets``): its training jobs, state
        #: machines and the training tasks in them, by stack name.
        self.names: dict[str, list[Entry]] = {}
        self.resolvers: list[Resolver] = []
        #: What each deploy did, in order (``deploy.update``).
        self.changes: list[StackChange] = []
        self._stacks: dict[str, tuple[dict[str, Any], Resolver]] = {}  # as last deployed
        self.assets: list[FileAsset] = []  # published into the local S3 by ``deploy``
        self.notes: list[str] = []
        self.bus = EventBus(self._invoke_target, self._send, self.account, self.region)
        self.faults = Faults(self.bus)
        self.lambdas = Lambdas(self.faults, self._send, self.region)
        self.training = TrainingJobs(self.bus.put, self.account, self.region)
        self.training.otherwise = Outcome.parse(simulate) if simulate is not None else None
        if python is not None:
            self.training.real.python = python
        self._current_execution: str | None = None
        self._stack = contextlib.ExitStack()
        self._run_counter = 0

    # -- moto, with the gaps filled -----------------------------------------------------------

    def __enter__(self) -> LocalCloud:
        try:
            self._start()
        except BaseException:
            self._stack.close()  # never half-patched: what was replaced is put back
            raise
        return self

    def _start(self) -> None:
        from moto import mock_aws

        for key, value in {
            "AWS_ENDPOINT_URL": None,  # the shell's (`local serve` prints one) bypasses moto
            **dict.fromkeys((k for k in os.environ if k.startswith("AWS_ENDPOINT_URL_")), None),
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }.items():
            self._stack.enter_context(environment_variable(key, value))
        self._stack.enter_context(
            mock_aws(
                config={
                    "stepfunctions": {"execute_state_machine": True},
                    "lambda": {"use_docker": False},
                }
            )
        )
        moto_gaps.quiet_interpreter(self._stack)
        patches = Patches(self._stack)
        moto_gaps.install(patches, self._on_execution_status, self.retry_waits)
        self.training.install(patches)
        install_invoke(patches, self.lambdas)
        self._scratch = Path(self._stack.enter_context(scratch_folder()))
        self._default_session()
        self.training.scratch = self._scratch / "jobs"
        self.training.scratch.mkdir()
        # Before moto goes: every real job's hosts are killed when the cloud closes.
        self._stack.callback(self.training.close)
        self.lambdas.set_stop_hook(self._stop_current)

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _default_session(self) -> None:
        """A fresh default boto3 session (the handlers' clients), with the throttle hook."""
        import boto3

        boto3.setup_default_session()
        assert boto3.DEFAULT_SESSION is not None
        self.faults.install_throttling(boto3.DEFAULT_SESSION)
        self._stack.callback(setattr, boto3, "DEFAULT_SESSION", None)

    def client(self, service: str) -> Any:
        """A boto3 client of the local cloud (default session, the deployment's region)."""
        import boto3

        return boto3.client(service, region_name=self.region)

    # -- deploying a synthesized template --------------------------------------------------

    def deploy(
        self,
        template: Mapping[str, Any] | str | os.PathLike[str],
        *,
        template_dir: Path | None = None,
    ) -> dict[str, str]:
        """Publish the template's assets into the local S3 (as ``cdk deploy`` does, see
        ``deploy.assets``; ``AssetError`` names a missing one), then create its resources (a
        stack deployed before is updated in place, its runs kept: ``deploy.update``, and
        ``changes`` says what changed); their ``Ref`` values by logical id.

        ``template``: the template, or the path of a synthesized one
        (``cdk.out/<Stack>.template.json``): all its stack's assets are published.
        ``template_dir``: the folder it was synthesized into, when ``template`` is a dict (the
        assets there that it names are published).
        """
        loaded = Template.load(template, template_dir)
        body = loaded.body
        account = detect_account(body, loaded.path) if not self.resolvers else None
        if account is not None and account != self.account:
            # A stack synthesized for an account serves and runs under it (moto's every answer).
            self._stack.enter_context(environment_variable("MOTO_ACCOUNT_ID", account))
            self.account = self.bus._account = self.training._account = account
        if not self._region_fixed and not self.resolvers:
            self.region = detect_region(body, loaded.path)
            os.environ["AWS_DEFAULT_REGION"] = os.environ["AWS_REGION"] = self.region
            self.bus._region = self.training._region = self.lambdas._region = self.region
            self.training._logs.region = self.region
        resolver = Resolver(
            body, region=self.region, account=self.account, stack_name=loaded.stack_name
        )
        where = Environment(self.account, self.region, resolver.partition)
        assets, notes = publish_template_assets(body, loaded.path, loaded.assembly, where)
        self.assets.extend(assets)
        self.notes.extend(notes)
        scratch = self._scratch / f"stack{len(self.changes)}"
        name = resolver.stack_name  # a template dict's (LocalStack) is always a new stack
        previous = self._stacks.get(name) if loaded.path is not None else None
        parts = (body, resolver, loaded.assembly, self.lambdas, self.bus, scratch)
        if previous is None:
            stack = Deployer(*parts).deploy()
            self.changes.append(new_stack(name, body))
        else:
            redeployer = Redeployer(*parts, previous=previous)
            stack = redeployer.deploy()
            self.changes.append(redeployer.change)
        if loaded.path is not None:
            self._stacks[name] = (body, resolver)
        self.resolvers.append(resolver)
        # New lists, not ones changed in place: a served account's threads read them meanwhile.
        updated = {machine.arn: machine for machine in stack.state_machines}
        self.definitions = {**self.definitions, **{a: m.definition for a, m in updated.items()}}
        self.deployed = [updated.pop(m.arn, m) for m in self.deployed] + list(updated.values())
        self.state_machines = [m.arn for m in self.deployed]
        machines = self.stack_machines(name) if previous is not None else stack.state_machines
        entries = template_entries(
            body, name, {m.logical_id: m.arn for m in machines}, self.definitions
        )
        self.names = {
            **self.names,
            name: [*(self.names.get(name, []) if not previous else []), *entries],
        }
        self.notes.extend(stack.notes)
        if resolver.unresolved:
            self.notes.append(
                "placeholders for values only AWS knows: "
                + ", ".join(sorted(set(resolver.unresolved)))
            )
        return {
            logical_id: str(resolver.ref(logical_id)) for logical_id in body.get("Resources", {})
        }

    def stack_machines(self, stack: str) -> list[StateMachine]:
        """The state machines deployed for ``stack`` (by its last deploy), in template order."""
        body, resolver = self._stacks[stack]
        arns = [
            str(resolver.ref(logical_id))
            for logical_id, resource in body.get("Resources", {}).items()
            if resource.get("Type") == "AWS::StepFunctions::StateMachine"
        ]
        return [m for arn in arns for m in self.deployed if m.arn == arn]

    def state_machine(self, name: str | None = None) -> str:
        """The ARN of the state machine called ``name`` (ARN, name, logical id, or
        ``STACK/CONSTRUCT_ID`` as ``runs.targets`` reads it); without a name, the only one.
        ``LookupError`` lists the choices otherwise (``TargetNotFound`` for an unknown name)."""
        machines = [(m.arn, m.name, m.logical_id) for m in self.deployed]
        return deployed_state_machine(name, machines, self.names)

    # -- events from the simulated services ------------------------------------------------

    def _on_execution_status(self, execution: Any, status: str) -> None:
        self.bus.put(execution_status_event(self.bus, execution, status))

    def _invoke_target(self, target: Target, payload: str) -> None:
        invoke_target(self.client, self.lambdas, self._send, target, payload)

    def _send(self, arn: str, body: str, attributes: dict[str, str]) -> None:
        """Deliver a message to an SQS queue, SNS topic or Lambda function by ARN."""
        send(self.client, self.lambdas, self.notes, arn, body, attributes)

    # -- schedules and the run loop --------------------------------------------------------

    def fire_schedules(self) -> int:
        """Deliver every enabled scheduled rule's event once (e.g. a reconciler); how many."""
        fired = self.bus.fire_schedules()
        self.settle()
        return fired

    def deliver_events(self) -> int:
        """Deliver the events accepted so far and run queued async invokes; how many."""
        return self.bus.pump() + self.lambdas.pump()

    def settle(self, timeout: float = 30.0) -> None:
        """Deliver events and async invokes until nothing is in flight."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.deliver_events()
            if not self.bus.pending() and not self.lambdas.running():
                return
            time.sleep(_TICK)

    def advance(self, seen: set[str]) -> None:
        """One step of what AWS does between calls: deliver events and async invokes, move
        jobs through their stages, and end each job that has run its length once its run's
        code is idle (``seen``: jobs found running at an earlier step, kept by the caller)."""
        self.deliver_events()
        self.training.tick()
        if self.bus.pending() or self.lambdas.running():
            return
        running = self.training.running()
        for job in running:
            if job in seen and self.training.due(job):
                self.training.end(job)
        seen.update(running)

    def end_training_job(self, name: str, outcome: str | Outcome | None = None) -> None:
        """End a running job now (with ``outcome``, else its scripted one) and deliver its event."""
        self.training.end(name, outcome)
        self.settle()

    def interrupt_training_job(self, name: str) -> None:
        """Reclaim a running job's spot instances: every host killed, then the same job
        started again on fresh hosts with its checkpoints restored (managed spot training)."""
        self.training.interrupt(name)

    def run(
        self,
        state_machine_arn: str | None = None,
        execution_input: Any = None,
        *,
        name: str | None = None,
        outcome: str | Outcome | None = None,
        outcomes: Iterable[str | Outcome] = (),
        failure_reason: str | None = None,
        job_duration: timedelta | None = None,
        stop_execution: bool = False,
        reconcile_every: float | None = None,
        stuck_after: float = 2.0,
        timeout: float = 60.0,
        follow: Follow | None = None,
    ) -> ExecutionResult:
        """Run one execution to its end and report it.

        ``outcomes``: how each training job the run creates ends, in creation order (``outcome``
        is a one-item shortcut); ``Completed`` after the list. A job ends once the run's code is
        idle and it has run ``job_duration`` (wall-clock; default zero). ``stop_execution``:
        StopExecution once a job is running. ``reconcile_every``:
        fire the scheduled rules every so many seconds; they also fire when the execution has
        made no progress for ``stuck_after`` seconds with nothing in flight.
        """
        arn = self.state_machine(state_machine_arn)
        self._run_counter += 1
        run_name = name or f"local-run-{self._run_counter}"
        payload = json.dumps(execution_input if execution_input is not None else {})

        def start() -> str:
            started = self.client("stepfunctions").start_execution(
                stateMachineArn=arn, name=run_name, input=payload
            )
            return str(started["executionArn"])

        scripted = ([outcome] if outcome is not None else []) + list(outcomes)
        self.training.script(scripted, failure_reason=failure_reason, job_duration=job_duration)
        return self._run_to_end(
            start, stop_execution, reconcile_every, stuck_after, timeout, follow
        )

    def redrive(
        self,
        execution_arn: str,
        *,
        outcomes: Iterable[str | Outcome] = (),
        job_duration: timedelta | None = None,
        reconcile_every: float | None = None,
        timeout: float = 60.0,
    ) -> ExecutionResult:
        """RedriveExecution of an execution that ended FAILED, ABORTED or TIMED_OUT, run to its
        end as ``run`` runs one (``moto_redrive``); ``outcomes``: how the redriven run's jobs end.
        The result's jobs and requests are the redriven run's, its history the execution's."""
        self.training.script(list(outcomes), job_duration=job_duration)

        def start() -> str:
            self.client("stepfunctions").redrive_execution(executionArn=execution_arn)
            return execution_arn

        return self._run_to_end(start, False, reconcile_every, 2.0, timeout, None)

    def _run_to_end(
        self,
        start: Callable[[], str],
        stop_execution: bool,
        reconcile_every: float | None,
        stuck_after: float,
        timeout: float,
        follow: Follow | None,
    ) -> ExecutionResult:
        first_attempt, first_request = len(self.training.attempts), len(self.training.requests)
        self._current_execution = execution_arn = start()
        follower = start_follow(follow, self.client, execution_arn)
        try:
            description = self._drive(
                execution_arn, stop_execution, reconcile_every, stuck_after, timeout, first_attempt
            )
        except TimeoutError:
            give_up(self.client("stepfunctions"), execution_arn, follower)
            raise
        finally:
            self._current_execution = None
        if follower is not None:
            follower.join(timeout=10)
        return ExecutionResult.of(
            description,
            self.history(execution_arn),
            self.client("sagemaker"),
            list(self.training.attempts[first_attempt:]),
            self.training.requests[first_request:],
        )

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        """Every history event of an execution."""
        paginator = self.client("stepfunctions").get_paginator("get_execution_history")
        return [
            e for page in paginator.paginate(executionArn=execution_arn) for e in page["events"]
        ]

    def _drive(
        self,
        execution_arn: str,
        stop_execution: bool,
        reconcile_every: float | None,
        stuck_after: float,
        timeout: float,
        first_attempt: int,
    ) -> dict[str, Any]:
        stepfunctions = self.client("stepfunctions")
        deadline = time.monotonic() + timeout
        seen: set[str] = set()
        stopped = False
        last_fire = time.monotonic()
        progress = (-1, time.monotonic())
        while time.monotonic() < deadline:
            if stop_execution and not stopped:
                self.deliver_events()  # its job runs on until the execution is stopped
            else:
                self.advance(seen)  # a job outlives the calls that started it
            idle = not self.bus.pending() and not self.lambdas.running()
            running = self.training.running()
            description = stepfunctions.describe_execution(executionArn=execution_arn)
            if description["status"] in TERMINAL_EXECUTION:
                self._settle_after(deadline)
                return dict(stepfunctions.describe_execution(executionArn=execution_arn))
            mine = [a for a in self.training.attempts[first_attempt:] if a.status == "InProgress"]
            if stop_execution and not stopped and mine and idle:
                stepfunctions.stop_execution(
                    executionArn=execution_arn, error="Stopped", cause="local run: stop_execution"
                )
                stopped = True
                continue
            now = time.monotonic()
            if reconcile_every is not None and now - last_fire >= reconcile_every:
                self.bus.fire_schedules()
                last_fire = now
            events = len(self.history(execution_arn)) if idle and not running else -1
            if events != progress[0]:
                progress = (events, now)
            elif now - progress[1] >= stuck_after:
                # Nothing in flight, no progress: what a scheduled reconciler is for.
                self.bus.fire_schedules()
                progress = (-1, now)
            time.sleep(_TICK)
        raise TimeoutError(
            f"the execution {execution_arn} did not end within {timeout:.0f} s; its last events: "
            + ", ".join(e["type"] for e in self.history(execution_arn)[-5:])
        )

    def _settle_after(self, deadline: float) -> None:
        """After the end: deliver what is in flight; stopping jobs end as stopped."""
        while time.monotonic() < deadline:
            self.deliver_events()
            stopping = [a.name for a in self.training.attempts if a.status == "Stopping"]
            busy = self.bus.pending() or self.lambdas.running()
            if not busy:
                for name in stopping:
                    if self.training.due(name):  # a real job: once its hosts have exited
                        self.training.end(name)
                if not stopping:
                    return
            time.sleep(_TICK)

    def _stop_current(self) -> None:
        if self._current_execution is not None:
            self.client("stepfunctions").stop_execution(
                executionArn=self._current_execution,
                error="Stopped",
                cause="local fault: stop_execution_during",
            )


__all__ = [
    "EXECUTION_EVENT_SOURCE",
    "EXECUTION_EVENT_TYPE",
    "TERMINAL_EXECUTION",
    "LocalCloud",
]
