"""The state a training task renders: a call of the shared submit Lambda that waits for a token.

``SubmitTaskState`` renders the task into a definition in the query language in effect
(JSONPath ``Parameters`` or JSONata ``Arguments``): the submit Lambda's payload (the spec, its
deployment, the run's overrides and the context fields that name the attempt) and the wait's
timeout; its own retriers are the state's first (added with ``add_retry``), as aws-cdk-lib's
tasks add theirs. ``HeterogeneousTrainingTask`` builds everything it renders.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn

from hetero_constructs.constructs import permissions
from hetero_constructs.constructs.props import HeterogeneousTrainingTaskProps
from hetero_constructs.constructs.retries import Retrier
from hetero_constructs.constructs.runner import CodeLocation, ContainingStateMachine, TrainingRunner
from hetero_constructs.request.context import Deployment
from hetero_constructs.spec.file.writer import spec_to_dict
from hetero_constructs.spec.training import TrainingSpec

# A string token as CDK encodes it in a string.
# Context-object fields the submit Lambda needs: they identify the attempt and its job.
_CONTEXT = {
    "taskToken": "Task.Token",
    "executionArn": "Execution.Id",
    "executionStartTime": "Execution.StartTime",
    "stateName": "State.Name",
    "stateEnteredTime": "State.EnteredTime",
    "retryCount": "State.RetryCount",
    "stateMachineArn": "StateMachine.Id",
}


class SubmitTaskState(sfn.TaskStateBase):
    """A task state that calls the shared submit Lambda and waits for its task token."""

    # What ``HeterogeneousTrainingTask`` sets before anything is rendered.
    path: str
    runner: TrainingRunner
    arns: permissions.Arns
    spec: TrainingSpec
    deployment: Deployment
    job_name_prefix: str
    completion_timeout_seconds: int | str
    channel_prefixes: list[str]
    control_role_arn: str
    role_arn: str
    code_location: CodeLocation | None
    _props: HeterogeneousTrainingTaskProps
    # The task's own retriers, added to the state with ``add_retry`` before any of the user's.
    _retries: list[Retrier]
    # The state machine a construct of this library renders the task into, as one JSON
    # document built in Python (see ``own_state_json``); None for a task users chain.
    _own_state_machine: ContainingStateMachine | None = None

    @property
    def _task_metrics(self) -> sfn.TaskMetricsConfig | None:
        return sfn.TaskMetricsConfig(
            metric_prefix_singular="LambdaFunction",
            metric_prefix_plural="LambdaFunctions",
            metric_dimensions={"LambdaFunctionArn": self.runner.submit_function_arn},
        )

    @property
    def _task_policies(self) -> list[iam.PolicyStatement] | None:
        return self.runner.invoke_statements

    # -- rendering ------------------------------------------------------------------------------

    def to_state_json(
        self, top_level_query_language: sfn.QueryLanguage | None = None
    ) -> Mapping[Any, Any]:
        """The task state, composed as aws-cdk-lib's ``TaskStateBase.toStateJson`` composes one.

        aws-cdk-lib's own tasks (``LambdaInvoke``, ``SageMakerCreateTrainingJob``) implement
        only ``_renderTask``. That hook, like the ``renderTaskBase`` it follows, is internal to
        TypeScript: a leading underscore keeps a member out of the jsii assembly, so no Python
        class can implement it (aws-cdk-lib 2.275's assembly lists ``toStateJson`` and the
        protected ``render*`` helpers of ``State``, not ``renderTask``). This method is that
        composition: the inherited hooks render the query language, the transition, the
        retriers (the task's own, added with ``add_retry``, then the user's) and the catchers;
        ``_render_task_base`` renders the fields of ``renderTaskBase`` this task sets;
        ``_render_task`` the call of the submit Lambda.
        """
        if self._own_state_machine is not None:
            raise ValueError(
                f"{self.path} is the task of the state machine {self._own_state_machine.path}, "
                "and a state can be used in one state machine only. Fix: chain a "
                "HeterogeneousTrainingTask of your own, or start that state machine from yours "
                "with tasks.StepFunctionsStartExecution."
            )
        return {
            **self._render_query_language(top_level_query_language),
            **self._render_next_end(),
            **self._render_retry_catch(top_level_query_language),
            **self._render_task_base(top_level_query_language),
            **self._render_task(top_level_query_language),
        }

    def _render_task_base(
        self, top_level_query_language: sfn.QueryLanguage | None
    ) -> dict[str, Any]:
        """What ``renderTaskBase`` renders of the fields this task sets (the order is the one this
        task has always rendered: ``renderTaskBase``'s, but for JSONata's ``Output``)."""
        props = self._props
        state: dict[str, Any] = {"Type": "Task"}
        if props.comment is not None:
            state["Comment"] = props.comment
        state["TimeoutSeconds"] = self.completion_timeout_seconds
        state.update(self._render_input_output() or {})  # InputPath, OutputPath, Output
        if props.result_path is not None:
            discard = props.result_path == sfn.JsonPath.DISCARD
            state["ResultPath"] = None if discard else props.result_path
        state.update(self._render_result_selector() or {})
        state.update(self._render_assign(top_level_query_language) or {})
        return state

    def _render_task(self, top_level_query_language: sfn.QueryLanguage | None) -> dict[str, Any]:
        """The call: ``Resource`` and ``Parameters`` (JSONPath) or ``Arguments`` (JSONata).

        As aws-cdk-lib's ``_renderParametersOrArguments`` renders them: JSONPath parameters go
        through ``FieldUtils.render_object`` (a JSONPath value becomes a ``key.$`` field).
        """
        language = self._props.query_language or top_level_query_language
        jsonata = language == sfn.QueryLanguage.JSONATA
        overrides = self._props.overrides
        if overrides is not None and not jsonata and _is_jsonata(overrides.value):
            raise ValueError(f"{self.path}: a JSONata override needs a JSONata task")
        arguments = self._submit_arguments(jsonata)
        if jsonata:
            return {"Resource": self._resource, "Arguments": arguments}
        return {"Resource": self._resource, "Parameters": sfn.FieldUtils.render_object(arguments)}

    def own_state_json(self, *, next_state: str, catch_state: str) -> dict[str, Any]:
        """The state in its construct's own state machine, rendered without jsii.

        The construct's state machine has the task's query language at its top and sets no
        paths, selector or assignments on it: only the transitions differ from ``to_state_json``.
        """
        jsonata = self._props.query_language == sfn.QueryLanguage.JSONATA
        state: dict[str, Any] = {
            "Next": next_state,
            "Retry": [retry.state_json() for retry in self._retries],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": catch_state}],
            "Type": "Task",
        }
        if self._props.comment is not None:
            state["Comment"] = self._props.comment
        state["TimeoutSeconds"] = self.completion_timeout_seconds
        state["Resource"] = self._resource
        state["Arguments" if jsonata else "Parameters"] = self._submit_arguments(jsonata)
        return state

    # -- the call of the submit Lambda ----------------------------------------------------------

    @property
    def _resource(self) -> str:
        return f"arn:{self.arns.partition}:states:::lambda:invoke.waitForTaskToken"

    def _submit_arguments(self, jsonata: bool) -> dict[str, Any]:
        return {"FunctionName": self.runner.submit_function_arn, "Payload": self._payload(jsonata)}

    def _spec_for_lambda(self) -> TrainingSpec:
        """The spec as the submit Lambda validates it: the code is the uploaded object."""
        if self.code_location is None or self.spec.source_dir is None:
            return self.spec
        return dataclasses.replace(self.spec, source_dir=self.code_location.url)

    @functools.cached_property
    def _static_payload(self) -> dict[str, Any]:
        deployment = {
            key: value
            for key, value in dataclasses.asdict(self.deployment).items()
            if value is not None and key != "job_name"
        }
        # The spec, not the request: the Lambda plans it again with the run's overrides, and
        # the request would double the definition's size (templates are limited to 1 MB).
        return {
            "spec": spec_to_dict(self._spec_for_lambda()),
            "deployment": deployment,
            "jobNamePrefix": self.job_name_prefix,
            "tokenTtlSeconds": _ttl(self.completion_timeout_seconds),
            "channelPrefixes": self.channel_prefixes,
            "controlRoleArn": self.control_role_arn,
            "runnerId": self.runner.runner_id,
        }

    def _payload(self, jsonata: bool) -> dict[str, Any]:
        payload = dict(self._static_payload)
        if jsonata:
            payload["context"] = {
                key: f"{{% $states.context.{path} %}}" for key, path in _CONTEXT.items()
            }
        else:
            payload["context"] = {f"{key}.$": f"$$.{path}" for key, path in _CONTEXT.items()}
        payload.update(self._input_fields(jsonata))
        return payload

    def _input_fields(self, jsonata: bool) -> dict[str, Any]:
        """The payload's ``input`` (the overrides) and ``jobKey``."""
        fields: dict[str, Any] = {}
        if self._props.overrides is not None:
            fields["input"] = self._props.overrides.value
        if self._props.job_key is not None:
            fields["jobKey"] = self._props.job_key
        return fields


def _ttl(timeout: int | str) -> int:
    """How long the run table keeps a job: its completion timeout and a day (28 days + 2)."""
    day = 24 * 3600
    return (timeout if isinstance(timeout, int) else 30 * day) + day


def _is_jsonata(value: Any) -> bool:
    return isinstance(value, str) and value.strip().startswith("{%")


__all__ = ["SubmitTaskState"]
