"""Training runs of deployed state machines, read and steered through the AWS APIs.

The client side of a run, below the command line (``hetero_constructs.cli`` is built on it):
``clients`` (the boto3 clients), ``inputs`` (an execution input checked as the submit Lambda
will), ``execution`` (the execution and the training jobs it created), ``logs`` (every host's
log lines labelled with its instance group), ``watch`` (what is new at each poll), ``stop``,
``metrics`` (each metric of a run over time, and its final value) and ``training_run``
(``TrainingRun``, the Python API).
Not to be confused with ``hetero_constructs.contract``, the contract the handlers share.
"""

from __future__ import annotations

from hetero_constructs.runs.clients import RunClients
from hetero_constructs.runs.logs import LogLine
from hetero_constructs.runs.training_run import JobStatus, RunInputError, RunStatus, TrainingRun

__all__ = ["JobStatus", "LogLine", "RunClients", "RunInputError", "RunStatus", "TrainingRun"]
