"""The events that end a training run, shared by the event rules and the Lambda handlers."""

from __future__ import annotations

JOB_EVENT_SOURCE = "aws.sagemaker"
JOB_EVENT_TYPE = "SageMaker Training Job State Change"
# A job in one of these states is over: its waiting task gets success or failure.
TERMINAL_JOB_STATUSES = ("Completed", "Failed", "Stopped")

EXECUTION_EVENT_SOURCE = "aws.states"
EXECUTION_EVENT_TYPE = "Step Functions Execution Status Change"
# An execution that ends so leaves its job without a reader: the job is stopped.
STOPPING_EXECUTION_STATUSES = ("ABORTED", "TIMED_OUT", "FAILED")
