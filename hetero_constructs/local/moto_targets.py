"""Every part of moto's internals the local account replaces or relies on, checked at start.

The local account fills moto's gaps by replacing attributes of its classes and modules
(``Patches.replace``). A moto release that renames, moves or re-signs one would leave the
account half-patched, or fail in the middle of a run. So each target is declared here with the
shape the replacement is written for, and ``require`` checks them all (``LocalCloud()``,
``local serve``) before anything is replaced: a release that moved one stops the start with one
``UnsupportedMoto`` naming the installed moto, each target that moved and the supported range.

A shape is what ``shape`` reads from the installed moto: a callable's parameters
(``(self, task_token, error=…)``: names, kinds and which have defaults; annotations and default
values left out), ``TypedDict`` and its keys, ``module`` and its name, ``None`` (a pointer moto
fills lazily) or ``absent`` (what the local account adds: moto has none).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: The distribution whose ``local`` extra states the supported moto releases.
DISTRIBUTION = "hetero-constructs"
ABSENT = "absent"
_SFN = "moto.stepfunctions"
_ASL = f"{_SFN}.parser.asl"
_STATE = f"{_ASL}.component.state"
_TASK_SERVICE = f"{_STATE}.exec.state_task.service"
_ITERATION = f"{_STATE}.exec.state_map.iteration"


@dataclass(frozen=True)
class Target:
    """An attribute of moto: ``path`` (``Class.attribute`` or ``attribute``) in ``module``, and
    the shape the local account is written for (``""``: only that it exists)."""

    module: str
    path: str
    shape: str = ""

    @property
    def name(self) -> str:
        return f"{self.module}.{self.path}"


_NORMALISE = "(self, {}, boto_service_name=…, service_action_name=…)"

#: What the local account replaces (``Patches.replace``), each once; see each module for why.
REPLACED: tuple[Target, ...] = (
    # moto_executions: nested executions, the context object, StopExecution, status changes,
    # task-token callbacks, a fresh token per attempt
    Target(f"{_TASK_SERVICE}.state_task_service_sfn",
           "StateTaskServiceSfn._eval_integration_pattern",
           "(self, env, resource_runtime_part, normalised_parameters, state_credentials)"),
    Target(f"{_STATE}.state", "StateData", "TypedDict EnteredTime, Name, RetryCount"),
    Target(f"{_SFN}.parser.backend.execution_worker", "ExecutionData",
           "TypedDict Id, Input, Name, RoleArn, StartTime"),
    Target(f"{_SFN}.parser.backend.execution", "Execution.stop",
           "(self, stop_date, error, cause)"),
    Target(f"{_ASL}.eval.environment", "Environment.set_error", "(self, error)"),
    Target(f"{_ASL}.eval.environment", "Environment.set_timed_out", "(self)"),
    Target(f"{_ASL}.eval.environment", "Environment.set_ended", "(self)"),
    Target(f"{_SFN}.responses", "StepFunctionResponse.stop_execution", "(self)"),
    Target(f"{_SFN}.parser.backend.execution", "Execution.start", "(self)"),
    Target(f"{_SFN}.parser.backend.execution", "BaseExecutionWorkerCommunication.terminated",
           "(self)"),
    Target(f"{_SFN}.responses", "StepFunctionResponse.send_task_failure", "(self)"),
    Target(f"{_SFN}.parser.models", "StepFunctionsParserBackend.send_task_success",
           "(self, task_token, outcome)"),
    Target(f"{_SFN}.parser.models", "StepFunctionsParserBackend.send_task_failure",
           "(self, task_token, error=…, cause=…)"),
    Target(f"{_SFN}.parser.models", "StepFunctionsParserBackend.start_execution",
           "(self, state_machine_arn, name=…, execution_input=…, trace_header=…)"),
    Target(f"{_TASK_SERVICE}.state_task_service_callback",
           "StateTaskServiceCallback._evaluate_with_timeout", "(self, env)"),
    # moto_heartbeats: closed callback tasks
    Target(f"{_TASK_SERVICE}.state_task_service_callback",
           "StateTaskServiceCallback._eval_execution", "(self, env)"),
    Target(f"{_SFN}.parser.models", "StepFunctionsParserBackend.send_task_heartbeat",
           "(self, task_token)"),
    # moto_redrive: RedriveExecution
    Target(f"{_STATE}.state", "CommonStateField._eval_body", "(self, env)"),
    Target(f"{_SFN}.responses", "StepFunctionResponse.redrive_execution", ABSENT),
    Target(f"{_SFN}.responses", "StepFunctionResponse.describe_execution", "(self)"),
    Target(f"{_SFN}.responses", "StepFunctionResponse.list_executions", "(self)"),
    Target(f"{_STATE}.exec.state_parallel.branch_worker", "BranchWorker._thread_routine",
           "(self)"),
    Target(f"{_ITERATION}.iteration_worker", "IterationWorker._eval_job", "(self, env, job)"),
    # moto_gaps: Retry waits compressed
    Target(f"{_ASL}.component.common.retry.retrier_decl", "time", "module time"),
    # moto_errors: a States.* error passed on keeps its name; heartbeat timeouts
    Target(f"{_ASL}.component.common.error_name.custom_error_name", "CustomErrorName.__init__",
           "(self, error_name)"),
    Target(f"{_STATE}.exec.state_task.state_task", "StateTask._from_error", "(self, env, ex)"),
    # moto_map_runs: a Distributed Map's tolerated failures
    Target(f"{_STATE}.exec.state_map.state_map", "StateMap.from_state_props",
           "(self, state_props)"),
    Target(f"{_ITERATION}.itemprocessor.distributed_item_processor_worker",
           "DistributedItemProcessorWorker._eval_job", "(self, env, job)"),
    Target(f"{_ASL}.parse.asl_parser", "AmazonStateLanguageParser.parse", "(definition)"),
    # moto_integrations: JSONata, service integrations' parameters and responses
    Target(f"{_ASL}.jsonata.jsonata", "_eval_jsonata", "None"),
    Target(f"{_ASL}.jsonata.jsonata", "encode_jsonata_variable_declarations", "(bindings)"),
    Target(f"{_ASL}.eval.states", "encode_jsonata_variable_declarations", "(bindings)"),
    Target(f"{_ASL}.eval.variable_store", "encode_jsonata_variable_declarations", "(bindings)"),
    Target(f"{_TASK_SERVICE}.state_task_service", "StateTaskService._normalise_parameters",
           _NORMALISE.format("parameters")),
    Target(f"{_TASK_SERVICE}.state_task_service", "StateTaskService._normalise_response",
           _NORMALISE.format("response")),
    # cloud: Lambda functions run in-process
    Target("moto.awslambda_simple.models", "LambdaSimpleBackend.invoke",
           "(self, function_name, qualifier, body, headers, response_headers)"),
    # training: the training-job lifecycle
    Target("moto.sagemaker.responses", "SageMakerResponse.create_training_job", "(self)"),
    Target("moto.sagemaker.responses", "SageMakerResponse.stop_training_job", ABSENT),
    Target("moto.sagemaker.models", "SageMakerModelBackend.describe_training_job",
           "(self, training_job_name)"),
)  # fmt: skip

#: What the local account imports from moto or calls on its objects without replacing it.
USED: tuple[Target, ...] = (
    Target("moto", "mock_aws"),
    # control: moto's server app, served as ThreadedMotoServer serves it, the channel in front
    Target("moto.moto_server.werkzeug_app", "DomainDispatcherApplication", "(create_app)"),
    Target("moto.moto_server.werkzeug_app", "create_backend_app", "(service)"),
    Target("moto.moto_server.werkzeug_app", "MotoRequestHandler"),
    Target("moto.core.exceptions", "ServiceException"),
    Target("moto.core.responses", "ActionResult"),
    Target("moto.core.responses", "EmptyResult"),
    Target("moto.awslambda_simple.models", "LambdaSimpleBackend"),
    Target("moto.cloudwatch.models", "cloudwatch_backends"),
    # events: rules' patterns are matched by moto's matcher
    Target("moto.events.models", "EventPattern.load", "(raw_pattern)"),
    Target("moto.events.models", "EventPattern.matches_event", "(self, event)"),
    Target("moto.logs.exceptions", "ResourceAlreadyExistsException"),
    Target("moto.logs.models", "logs_backends"),
    Target("moto.s3.exceptions", "MissingBucket"),
    Target("moto.s3.models", "s3_backends"),
    Target("moto.sagemaker", "exceptions"),
    Target("moto.sagemaker.models", "SageMakerModelBackend"),
    Target("moto.sagemaker.responses", "SageMakerResponse"),
    Target(f"{_SFN}.exceptions", "InvalidToken"),
    Target(f"{_SFN}.responses", "StepFunctionResponse"),
    Target(f"{_SFN}.parser.models", "StepFunctionsParserBackend"),
    Target(f"{_SFN}.parser.models", "StepFunctionsParserBackend._get_executions",
           "(self, execution_status=…)"),
    Target(f"{_SFN}.parser.utils", "TMP_THREADS"),
    *(
        Target(f"{_SFN}.parser.api", name)
        for name in (
            "ExecutionAbortedEventDetails", "ExecutionFailedEventDetails", "ExecutionStatus",
            "ExecutionTimedOutEventDetails", "HistoryEventType", "StateMachineType",
        )
    ),
    Target(f"{_SFN}.parser.backend", "execution"),
    Target(f"{_SFN}.parser.backend", "execution_worker"),
    Target(f"{_SFN}.parser.backend.execution", "Execution"),
    Target(f"{_SFN}.parser.backend.execution", "Execution._get_start_execution_worker",
           "(self)"),
    Target(f"{_SFN}.parser.backend.execution", "SyncExecution"),
    Target(f"{_SFN}.parser.backend.execution_worker",
           "ExecutionWorker._get_evaluation_entrypoint", "(self)"),
    Target(f"{_SFN}.parser.backend.execution_worker",
           "ExecutionWorker._get_evaluation_environment", "(self)"),
    Target(f"{_ASL}.component.common.error_name.custom_error_name", "CustomErrorName"),
    Target(f"{_ASL}.component.common.error_name.failure_event", "FailureEvent"),
    Target(f"{_ASL}.component.common.error_name.failure_event", "FailureEventException"),
    Target(f"{_ASL}.component.common.error_name.states_error_name", "StatesErrorName"),
    Target(f"{_ASL}.component.common.error_name.states_error_name",
           "StatesErrorName.from_name", "(error_name)"),
    Target(f"{_ASL}.component.common.error_name.states_error_name_type",
           "StatesErrorNameType"),
    Target(f"{_ASL}.component.common.error_name.states_error_name_type",
           "StatesErrorNameType.from_name", "(name)"),
    Target(f"{_ASL}.component.common.error_name.states_error_name", "StatesErrorName.__init__",
           "(self, typ)"),
    Target(f"{_ASL}.component.common.retry", "retrier_decl"),
    Target(f"{_SFN}.parser.api", "TaskTimedOutEventDetails"),
    Target(f"{_ASL}.eval.callback.callback", "HeartbeatTimeoutError"),
    Target(f"{_STATE}.exec.state_task.state_task", "StateTask"),
    Target(f"{_ASL}.component.eval_component", "EvalComponent"),
    Target(f"{_STATE}", "state"),
    Target(f"{_STATE}.state", "CommonStateField"),
    Target(f"{_STATE}.exec.execute_state", "ExecutionState"),
    Target(f"{_STATE}.exec.state_map", "state_map"),
    Target(f"{_STATE}.exec.state_map", "tolerated_failure"),
    Target(f"{_ITERATION}.itemprocessor", "distributed_item_processor_worker"),
    Target(f"{_ITERATION}.iteration_worker", "IterationWorker"),
    Target(f"{_STATE}.exec.state_parallel.branch_worker", "BranchWorker"),
    Target(f"{_TASK_SERVICE}", "state_task_service"),
    Target(f"{_TASK_SERVICE}", "state_task_service_callback"),
    Target(f"{_TASK_SERVICE}", "state_task_service_sfn"),
    Target(f"{_TASK_SERVICE}.resource", "ResourceCondition"),
    Target(f"{_TASK_SERVICE}.state_task_service", "StateTaskService._to_boto_request",
           "(self, parameters, structure_shape)"),
    Target(f"{_TASK_SERVICE}.state_task_service", "StateTaskService._from_boto_response",
           "(self, response, structure_shape)"),
    Target(f"{_ASL}.eval", "states"),
    Target(f"{_ASL}.eval", "variable_store"),
    *(
        Target(f"{_ASL}.eval.callback.callback", name)
        for name in (
            "CallbackConsumerLeft", "CallbackConsumerTimeout", "CallbackNotifyConsumerError",
            "CallbackOutcomeFailure", "CallbackOutcomeSuccess",
        )
    ),
    Target(f"{_ASL}.eval.environment", "Environment"),
    Target(f"{_ASL}.eval.event.event_manager", "EventHistoryContext"),
    *(
        Target(f"{_ASL}.eval.program_state", name)
        for name in ("ProgramEnded", "ProgramStopped", "ProgramTimedOut")
    ),
    Target(f"{_ASL}.jsonata", "jsonata"),
    Target(f"{_ASL}.jsonata.jsonata", "JSONataException"),
    # The replaced pointer is what this calls: moto's evaluation goes through it.
    Target(f"{_ASL}.jsonata.jsonata", "eval_jsonata_expression", "(jsonata_expression)"),
    Target(f"{_ASL}.parse", "asl_parser"),
    Target(f"{_ASL}.utils.encoding", "to_json_str"),
)  # fmt: skip


class UnsupportedMoto(RuntimeError):
    """The installed moto moved what the local account replaces or relies on.

    ``moto_version``: the installed release; ``problems``: one line per target that moved;
    ``supported``: the releases the ``local`` extra allows.
    """

    def __init__(self, moto_version: str, problems: list[str], supported: str) -> None:
        self.moto_version = moto_version
        self.problems = problems
        self.supported = supported
        lines = "\n".join(f"  - {problem}" for problem in problems)
        known = supported[:1] in "<>=!~"
        fix = f"pip install 'moto{supported}'" if known else f"pip install '{DISTRIBUTION}[local]'"
        super().__init__(
            f"the local account cannot start on moto {moto_version}: this release moved "
            f"{len(problems)} part(s) of moto's internals that the local account replaces "
            f"or relies on (nothing was replaced):\n{lines}\n"
            f"Supported moto releases: {supported} (the 'local' extra of {DISTRIBUTION}). "
            f"Fix: {fix}"
        )


def shape(value: Any) -> str:
    """What a target is, as ``REPLACED`` and ``USED`` declare it (see the module docstring)."""
    if value is None:
        return "None"
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if typing.is_typeddict(value):
        return "TypedDict " + ", ".join(sorted(value.__annotations__))
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return f"{type(value).__name__} (no signature)"
    parameters = [
        parameter.replace(
            annotation=inspect.Parameter.empty,
            default=inspect.Parameter.empty
            if parameter.default is inspect.Parameter.empty
            else _A_DEFAULT,
        )
        for parameter in signature.parameters.values()
    ]
    return str(signature.replace(parameters=parameters, return_annotation=inspect.Parameter.empty))


class _Default:
    """A default value, whatever it is: a shape says only that there is one."""

    def __repr__(self) -> str:
        return "…"


_A_DEFAULT = _Default()


_MISSING = object()


def resolve(target: Target) -> tuple[Any, str, Any]:
    """The owner (module or class) of ``target``, the attribute's name, and its value (as
    ``getattr`` reads it; ``ABSENT`` when there is none). ``LookupError``: its module or an
    owner on its path is missing."""
    try:
        owner: Any = importlib.import_module(target.module)
    except ImportError as error:
        raise LookupError(f"module {target.module} cannot be imported ({error})") from None
    *owners, attribute = target.path.split(".")
    for name in owners:
        owner = _attribute(owner, name)
        if owner is _MISSING:
            raise LookupError(f"{target.module}.{name} is missing")
    value = _attribute(owner, attribute)
    return owner, attribute, ABSENT if value is _MISSING else value


def _attribute(owner: Any, name: str) -> Any:
    value = getattr(owner, name, _MISSING)
    if value is _MISSING and isinstance(owner, types.ModuleType):
        try:  # a submodule its package has not imported yet
            value = importlib.import_module(f"{owner.__name__}.{name}")
        except ImportError:
            return _MISSING
    return value


def problems(targets: Iterable[Target]) -> list[str]:
    """One line per target that is missing or not of its declared shape (one per module that
    cannot be imported, or owner that is missing, with how many targets it holds)."""
    found: list[str] = []
    unreachable: dict[str, list[str]] = {}
    for target in targets:
        try:
            _, _, value = resolve(target)
        except LookupError as error:
            unreachable.setdefault(str(error), []).append(target.path)
            continue
        if value is ABSENT:
            if target.shape != ABSENT:
                found.append(f"{target.name}: missing")
            continue
        if target.shape == ABSENT:
            found.append(
                f"{target.name}: moto has it now ({shape(value)}); the local account adds "
                "its own and would hide moto's"
            )
        elif target.shape and shape(value) != target.shape:
            found.append(
                f"{target.name}: is {shape(value)}, the local account expects {target.shape}"
            )
    for reason, paths in unreachable.items():
        found.append(f"{reason}: {', '.join(paths)} missing with it")
    return found


def unfit(original: Any, replacement: Any) -> str | None:
    """Why ``replacement`` cannot be called as moto calls ``original`` (each of its parameters,
    by position or by name), or None."""
    try:
        theirs = inspect.signature(original).parameters.values()
        ours = inspect.signature(replacement).parameters
    except (TypeError, ValueError):
        return None  # not a callable of Python's: nothing to compare
    kinds = {parameter.kind for parameter in ours.values()}
    positional = [
        p for p in ours.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    missing = []
    for index, parameter in enumerate(p for p in theirs if p.kind is not p.VAR_KEYWORD):
        if parameter.kind is parameter.VAR_POSITIONAL:
            if inspect.Parameter.VAR_POSITIONAL not in kinds:
                missing.append(f"*{parameter.name}")
            continue
        by_position = index < len(positional) or inspect.Parameter.VAR_POSITIONAL in kinds
        mine = ours.get(parameter.name)
        by_name = (mine is not None and mine.kind is not mine.POSITIONAL_ONLY) or (
            inspect.Parameter.VAR_KEYWORD in kinds
        )
        needs: dict[Any, bool] = {
            parameter.POSITIONAL_ONLY: by_position,
            parameter.KEYWORD_ONLY: by_name,
            # The instance is passed by position, whatever its name.
            parameter.POSITIONAL_OR_KEYWORD: by_position
            and (by_name or parameter.name in ("self", "cls")),
        }
        if not needs[parameter.kind]:
            missing.append(parameter.name)
    if missing:
        return f"takes {shape(replacement)}, not every parameter of {shape(original)}: {missing}"
    return None


def moto_version() -> str:
    """The installed moto's release (from its metadata)."""
    try:
        return importlib.metadata.version("moto")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def supported_range() -> str:
    """The moto releases the ``local`` extra allows, as the installed metadata states them."""
    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return f"unknown ({DISTRIBUTION} is not installed, and its metadata states the range)"
    pattern = re.compile(
        r"^moto(\[[^\]]*\])?\s*(?P<specifier>[^;]*);.*extra\s*==\s*['\"]local['\"]"
    )
    for requirement in requirements:
        match = pattern.match(requirement.strip())
        if match:
            return ",".join(sorted(match["specifier"].replace(" ", "").split(","), reverse=True))
    return f"unknown (the 'local' extra of {DISTRIBUTION} names no moto)"


def require() -> dict[tuple[Any, str], Target]:
    """Check every target (``REPLACED`` and ``USED``); ``UnsupportedMoto`` names each one the
    installed moto moved. The replaced targets by (owner, attribute name), for ``Patches``."""
    if importlib.util.find_spec("moto") is None:
        raise UnsupportedMoto("(not installed)", ["moto is not installed"], supported_range())
    found = problems((*REPLACED, *USED))
    if found:
        raise UnsupportedMoto(moto_version(), found, supported_range())
    checked = {}
    for target in REPLACED:
        owner, attribute, _ = resolve(target)
        checked[(owner, attribute)] = target
    return checked


__all__ = [
    "ABSENT",
    "DISTRIBUTION",
    "REPLACED",
    "USED",
    "Target",
    "UnsupportedMoto",
    "moto_version",
    "problems",
    "require",
    "resolve",
    "shape",
    "supported_range",
    "unfit",
]
