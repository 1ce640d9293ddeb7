"""``TrainingDashboard``: the CloudWatch dashboard of one training task or job.

The body comes from ``hetero_constructs.contract.dashboard`` (one row per instance group, the job's
own metrics, the runner), rendered with the stack's ``to_json_string`` so that the state
machine's ARN, the dead-letter queue's name and the region may be tokens.
``HeterogeneousTrainingJob.add_dashboard()`` makes one for a job; for a task in a state machine
of your own, ``TrainingDashboard(scope, "Dashboard", task=task, state_machine=machine)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from hetero_constructs.contract.dashboard import DashboardInputs, dashboard_body
from hetero_constructs.contract.metrics import groups_of

if TYPE_CHECKING:
    from hetero_constructs.constructs.task import HeterogeneousTrainingTask


class TrainingDashboard(Construct):
    """A CloudWatch dashboard of a training task's runs (its resource has the id ``Resource``).

    ``state_machine`` (or ``state_machine_arn``) is the state machine whose executions are the
    runs: its executions started, succeeded and failed are shown with the runner's dead
    letters. ``period`` is the graphs' period (default one minute, the host metrics' own).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        task: HeterogeneousTrainingTask,
        state_machine: sfn.IStateMachine | None = None,
        state_machine_arn: str | None = None,
        dashboard_name: str | None = None,
        title: str | None = None,
        period: Duration | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if state_machine is not None:
            state_machine_arn = state_machine.state_machine_arn
        if state_machine_arn is None:
            raise ValueError(
                f"{self.node.path}: the dashboard needs the state machine that runs the task. "
                "Fix: pass state_machine=... (or state_machine_arn=...)."
            )
        seconds = int(period.to_seconds()) if period is not None else 60
        spec = task.spec
        self.inputs = DashboardInputs(
            title=title or f"Training: {task.path}",
            job_name_prefix=task.job_name_prefix,
            groups=groups_of(spec),
            job_metrics=list(task.own_metric_names),
            state_machine_arn=state_machine_arn,
            dead_letter_queue_name=task.runner.dead_letters.queue_name,
            region=Aws.REGION,
            builtin_metrics=task.builtin_metrics,
            period_seconds=seconds,
        )
        self.body: dict[str, Any] = dashboard_body(self.inputs)
        self.resource = cloudwatch.CfnDashboard(
            self,
            "Resource",
            dashboard_body=Stack.of(self).to_json_string(self.body),
            dashboard_name=dashboard_name,
        )

    @property
    def dashboard_name(self) -> str:
        """The dashboard's name (its ``Ref``)."""
        return self.resource.ref


__all__ = ["TrainingDashboard"]
