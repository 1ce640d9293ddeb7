"""The template's Python Lambda functions, run in-process from their code folders.

moto does not run Lambda code; each invoke moto receives (from Step Functions, ``lambda:Invoke``,
EventBridge) runs the function's handler here, with its environment variables set for the
duration of the call, as the Lambda runtime would:

- The handler ``module.function`` is imported from the function's code folder (its asset) at the
  first invoke, like a cold start. A failed import is the runtime's ``Runtime.ImportModuleError``.
- Environment: this library's handlers get their function's variables passed in
  (``hetero_constructs.handlers.environment``); ``os.environ`` is left alone, as other threads
  create clients meanwhile. Other functions' code gets ``os.environ`` set for the call.
- Module isolation: every top-level module or package of a code folder is private to its
  function, so two functions may both have ``index.py`` or ``util.py``. Before an invocation the
  function's own modules are put in ``sys.modules`` and its folder first on ``sys.path``; after
  it they are taken out again. Modules this process had already imported when the function was
  deployed (``boto3``, ``botocore``, this library) stay shared: swapping them would pull them
  from under moto and the runner, which use them from other threads. Invocations run one at a
  time (a re-entrant lock: a handler may invoke another synchronously).
- ``AWS_DATA_PATH`` is never set in-process: a Lambda's trimmed botocore models would hide
  operations from every other client of the process.
- Functions that are not Python (e.g. aws-cdk-lib's Node.js custom-resource providers) are
  deployed in moto but not run: an invoke answers a ``LocalRunner.NotRun`` function error.
- Asynchronous invokes (EventBridge targets, ``InvocationType=Event``) follow Lambda's async
  semantics: on a function error two more attempts (``MaximumRetryAttempts`` of the function's
  ``EventInvokeConfig``), then the on-failure destination or the dead-letter queue, else dropped.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from hetero_constructs.handlers.environment import function_environment
from hetero_constructs.local.faults import Faults
from hetero_constructs.local.patching import Patches

#: Sends a message to an SQS queue, SNS topic, Lambda function or event bus by ARN.
Sender = Callable[[str, str, dict[str, str]], None]
#: Called when the stop-during fault fires for an invocation.
StopHook = Callable[[], None]

_INVOKE_LOCK = threading.RLock()  # sys.modules, sys.path and os.environ are process-wide
NOT_RUN_ERROR = "LocalRunner.NotRun"


@dataclass
class LocalFunction:
    """A Lambda function of the template, as deployed locally."""

    logical_id: str
    name: str
    arn: str
    handler: str
    runtime: str
    code_dir: Path | None
    environment: dict[str, str]
    timeout: int = 3
    memory: int = 128
    not_run: str | None = None  # why this function does not run locally
    max_async_retries: int = 2
    on_success: str | None = None
    on_failure: str | None = None
    dead_letter: str | None = None
    private_names: frozenset[str] = frozenset()
    modules: dict[str, ModuleType] = field(default_factory=dict)

    @property
    def names(self) -> set[str]:
        """Every name a fault or a caller may use for this function."""
        return {self.logical_id, self.name, self.arn, self.handler}


@dataclass
class Invocation:
    """One invocation: which function, the event, and its error type if it failed."""

    function: str
    event: Any
    error: str | None = None
    asynchronous: bool = False


def private_module_names(code_dir: Path) -> tuple[frozenset[str], frozenset[str]]:
    """(private, shared): the code folder's top-level modules, split by whether this process
    has already imported a module of that name."""
    names: set[str] = set()
    for entry in code_dir.iterdir():
        if entry.is_dir():
            if entry.name.isidentifier() and any(entry.glob("*.py")):
                names.add(entry.name)
        elif entry.suffix in (".py", ".so", ".pyd") and entry.name.split(".")[0].isidentifier():
            names.add(entry.name.split(".")[0])
    shared = frozenset(name for name in names if name in sys.modules)
    return frozenset(names - shared), shared


class _LambdaContext:
    """The ``context`` argument of a Python handler."""

    def __init__(self, function: LocalFunction) -> None:
        self.function_name = function.name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function.arn
        self.memory_limit_in_mb = str(function.memory)
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function.name}"
        self.log_stream_name = datetime.now(UTC).strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex
        self._deadline = time.monotonic() + function.timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class FunctionError(Exception):
    """A handler's error as the Lambda runtime reports it."""

    def __init__(self, error_type: str, message: str, trace: list[str] | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.trace = trace or []

    def payload(self) -> bytes:
        body = {"errorMessage": str(self), "errorType": self.error_type}
        if self.trace:
            body["stackTrace"] = self.trace  # type: ignore[assignment]
        return json.dumps(body).encode()


class Lambdas:
    """The deployed functions and their invocations."""

    def __init__(self, faults: Faults, send: Sender, region: str) -> None:
        self.functions: dict[str, LocalFunction] = {}
        self.invocations: list[Invocation] = []
        self.dropped: list[Invocation] = []  # async events that no retry, destination or DLQ took
        self._faults = faults
        self._send = send
        self._region = region
        self._stop_hook: StopHook | None = None
        self._queue: deque[tuple[LocalFunction, str]] = deque()
        self._lock = threading.Lock()
        self._running = 0

    def set_stop_hook(self, hook: StopHook | None) -> None:
        self._stop_hook = hook

    def register(self, function: LocalFunction) -> None:
        """Add ``function``, or replace the one of its name (a redeploy): a new mapping, as
        other threads read the functions meanwhile."""
        self.functions = {**self.functions, function.name: function}

    def find(self, name_or_arn: str) -> LocalFunction:
        """The function called ``name_or_arn`` (a name, an ARN, a logical id or a handler)."""
        name = name_or_arn
        if name.startswith("arn:"):
            parts = name.split(":")
            name = parts[6] if len(parts) > 6 else parts[-1]
        if name in self.functions:
            return self.functions[name]
        for function in self.functions.values():
            if name_or_arn in function.names:
                return function
        raise KeyError(f"no Lambda function {name_or_arn!r} in the deployed template")

    def running(self) -> bool:
        """An invocation is under way or an async invoke is queued."""
        with self._lock:
            return self._running > 0 or bool(self._queue)

    # -- invoking ---------------------------------------------------------------------------

    def invoke(self, name_or_arn: str, payload: bytes | str | None) -> bytes:
        """A synchronous invoke; raises ``FunctionError`` for a function error."""
        function = self.find(name_or_arn)
        return self._run(function, payload, asynchronous=False)

    def queue_async(self, name_or_arn: str, payload: str) -> None:
        """An ``InvocationType=Event`` invoke: runs at the next ``pump``."""
        with self._lock:
            self._queue.append((self.find(name_or_arn), payload))

    def pump(self) -> int:
        """Run the queued asynchronous invokes; how many."""
        count = 0
        while True:
            with self._lock:
                if not self._queue:
                    return count
                function, payload = self._queue.popleft()
            self.invoke_async(function, payload)
            count += 1

    def invoke_async(self, function: LocalFunction, payload: str) -> None:
        """Lambda's asynchronous invocation: retries, then destination, DLQ or dropped."""
        attempts = 0
        while True:
            attempts += 1
            try:
                response = self._run(function, payload, asynchronous=True)
            except FunctionError as error:
                if attempts <= function.max_async_retries:
                    continue
                self._async_failed(function, payload, error, attempts)
                return
            if function.on_success:
                record = self._record(function, payload, "Success", attempts, None, response)
                self._send(function.on_success, json.dumps(record), {})
            return

    def _async_failed(
        self, function: LocalFunction, payload: str, error: FunctionError, attempts: int
    ) -> None:
        if function.on_failure:
            record = self._record(function, payload, "RetriesExhausted", attempts, error, None)
            self._send(function.on_failure, json.dumps(record), {})
        elif function.dead_letter:
            self._send(
                function.dead_letter,
                payload,
                {
                    "RequestID": str(uuid.uuid4()),
                    "ErrorCode": "200",
                    "ErrorMessage": str(error),
                },
            )
        else:
            self.dropped.append(Invocation(function.name, _parsed(payload), error.error_type, True))

    def _record(
        self,
        function: LocalFunction,
        payload: str,
        condition: str,
        attempts: int,
        error: FunctionError | None,
        response: bytes | None,
    ) -> dict[str, Any]:
        """The invocation record Lambda sends to a destination."""
        context: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
        if error is not None:
            context["functionError"] = "Unhandled"
        return {
            "version": "1.0",
            "timestamp": datetime.now(UTC).isoformat(),
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": f"{function.arn}:$LATEST",
                "condition": condition,
                "approximateInvokeCount": attempts,
            },
            "requestPayload": _parsed(payload),
            "responseContext": context,
            "responsePayload": json.loads(error.payload()) if error else _parsed(response),
        }

    def _run(
        self, function: LocalFunction, payload: bytes | str | None, asynchronous: bool
    ) -> bytes:
        event = _parsed(payload)
        invocation = Invocation(function.name, event, asynchronous=asynchronous)
        self.invocations.append(invocation)
        with self._lock:
            self._running += 1
        try:
            if self._stop_hook is not None and self._faults.take_stop(function.names):
                self._stop_hook()
            if function.not_run:
                raise FunctionError(NOT_RUN_ERROR, function.not_run)
            injected = self._faults.take_lambda_fault(function.names, after_work=False)
            if injected:
                raise FunctionError(injected, f"injected {injected} before the handler ran")
            result = self._call_handler(function, event)
            injected = self._faults.take_lambda_fault(function.names, after_work=True)
            if injected:
                raise FunctionError(injected, f"injected {injected} after the handler ran")
            try:
                return json.dumps(result).encode()
            except TypeError as error:
                raise FunctionError("Runtime.MarshalError", str(error)) from error
        except FunctionError as error:
            invocation.error = error.error_type
            raise
        finally:
            with self._lock:
                self._running -= 1

    def _call_handler(self, function: LocalFunction, event: Any) -> Any:
        assert function.code_dir is not None
        module_name, _, attribute = function.handler.replace("/", ".").rpartition(".")
        with _INVOKE_LOCK, self._isolated(function), self._given(function):
            try:
                module = importlib.import_module(module_name)
            except Exception as error:
                raise FunctionError(
                    "Runtime.ImportModuleError",
                    f"Unable to import module '{module_name}': {error}",
                ) from error
            handler = getattr(module, attribute, None)
            if not callable(handler):
                raise FunctionError(
                    "Runtime.HandlerNotFound",
                    f"Handler '{attribute}' missing on module '{module_name}'",
                )
            try:
                return handler(event, _LambdaContext(function))
            except Exception as error:
                frames = traceback.format_tb(error.__traceback__)[1:]
                raise FunctionError(type(error).__name__, str(error), frames) from error

    @contextmanager
    def _isolated(self, function: LocalFunction) -> Iterator[None]:
        """The function's private modules in ``sys.modules`` and its folder on ``sys.path``."""
        private = function.private_names

        def own(name: str) -> bool:
            return name.partition(".")[0] in private

        saved = {name: sys.modules.pop(name) for name in list(sys.modules) if own(name)}
        sys.modules.update(function.modules)
        folder = str(function.code_dir)
        sys.path.insert(0, folder)
        importlib.invalidate_caches()
        try:
            yield
        finally:
            function.modules = {name: m for name, m in list(sys.modules.items()) if own(name)}
            for name in function.modules:
                del sys.modules[name]
            sys.modules.update(saved)
            sys.path.remove(folder)

    def _given(self, function: LocalFunction) -> AbstractContextManager[None]:
        """The function's environment for one invocation. This library's handlers are given it
        (``handlers.environment``), the process's ``os.environ`` stays as it is: other threads
        create clients meanwhile. Any other function's code reads ``os.environ``, set for the
        call."""
        values = self._environment(function)
        assert function.code_dir is not None
        if (function.code_dir / "hetero_constructs").is_dir():
            return function_environment(values)
        return _environment(values)

    def _environment(self, function: LocalFunction) -> dict[str, str]:
        return {
            **function.environment,
            "AWS_REGION": self._region,
            "AWS_DEFAULT_REGION": self._region,
            "AWS_LAMBDA_FUNCTION_NAME": function.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.name}",
            "LAMBDA_TASK_ROOT": str(function.code_dir),
            "_HANDLER": function.handler,
        }


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    previous = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _parsed(payload: bytes | str | None) -> Any:
    if not payload:
        return {}
    try:
        return json.loads(payload)
    except ValueError:
        return payload.decode() if isinstance(payload, bytes) else payload


def install_invoke(patches: Patches, lambdas: Lambdas) -> None:
    """moto's Lambda Invoke runs the function in-process (``Event``: queued, as AWS does)."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    def invoke(
        backend: Any,
        function_name: str,
        qualifier: Any,
        body: Any,
        headers: Any,
        response_headers: dict[str, str],
    ) -> bytes:
        kind = headers.get("X-Amz-Invocation-Type") if headers else None
        if kind == "DryRun":
            return b""
        if kind == "Event":
            lambdas.queue_async(function_name, _text(body))
            return b""
        try:
            return lambdas.invoke(function_name, body)
        except FunctionError as error:
            response_headers["x-amz-function-error"] = "Unhandled"
            return error.payload()

    patches.replace(LambdaSimpleBackend, "invoke", invoke)


def _text(body: Any) -> str:
    if body is None:
        return "{}"
    return body.decode() if isinstance(body, bytes) else str(body)


__all__ = [
    "NOT_RUN_ERROR",
    "FunctionError",
    "Invocation",
    "Lambdas",
    "LocalFunction",
    "Sender",
    "StopHook",
    "install_invoke",
    "private_module_names",
]
