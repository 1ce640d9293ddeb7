"""The data plane's errors: each says where (host, worker), what went wrong and what to do."""

from __future__ import annotations


class DataPlaneError(RuntimeError):
    """Something on the data path between the data group and the training group failed."""


class ProtocolError(DataPlaneError):
    """A peer sent something that is not a valid frame (garbage, a frame over the limits, a
    frame out of turn). The connection is closed; nothing of the frame was allocated."""


class AuthenticationError(DataPlaneError):
    """A peer did not prove the job's secret (HMAC challenge-response), or refused ours."""


class DataHostLost(DataPlaneError):
    """A data host or one of its workers died, failed or went silent.

    Attributes:
        host: The data host's name (as the trainer knows it, e.g. ``algo-2``).
        worker: The worker index on that host, or ``None`` for the whole host.
        remote_traceback: The worker's traceback text when it failed with an exception.
    """

    def __init__(
        self, host: str, worker: int | None, problem: str, remote_traceback: str = ""
    ) -> None:
        where = f"data host {host}" + ("" if worker is None else f" worker {worker}")
        message = f"{where}: {problem}"
        if remote_traceback:
            message += f"\n--- traceback on {where} ---\n{remote_traceback.rstrip()}"
        super().__init__(message)
        self.host = host
        self.worker = worker
        self.problem = problem
        self.remote_traceback = remote_traceback


class TrainersGone(DataPlaneError):
    """``serve`` gave up: no trainer spoke for ``idle_timeout`` seconds before all finished,
    or a trainer aborted. The data host exits non-zero instead of billing until the job's
    ``MaxRuntimeInSeconds``."""


class WorkerFailed(DataPlaneError):
    """A worker process of ``serve`` raised or died; the trainers were told (with the text)."""


__all__ = [
    "AuthenticationError",
    "DataHostLost",
    "DataPlaneError",
    "ProtocolError",
    "TrainersGone",
    "WorkerFailed",
]
