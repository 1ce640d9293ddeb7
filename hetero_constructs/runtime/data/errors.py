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


class BatchRefused(DataPlaneError):
    """A batch ``make_batches`` yielded cannot arrive exactly as it was made, so the data host
    refused to send it: it is over the trainer's ``max_batch_bytes``, or it holds a value that
    would change on the way (a non-string dict key, a tuple, a NaN, a numpy scalar, ...).

    Raised on the data host (its worker fails with this text) and on the trainer, whatever
    ``on_host_loss`` says: it is a bug to fix in ``make_batches``, not a host to do without.

    Attributes:
        host: The data host's name on the trainer's side (``None`` on the data host).
        worker: The worker that refused the batch (``None`` on the data host).
        problem: What is wrong, with where in the batch and the fix.
    """

    def __init__(self, problem: str, host: str | None = None, worker: int | None = None) -> None:
        where = (
            ""
            if host is None
            else f"data host {host}"
            + ("" if worker is None else f" worker {worker}")
            + " refused a batch: "
        )
        super().__init__(where + problem)
        self.host = host
        self.worker = worker
        self.problem = problem


class TrainersGone(DataPlaneError):
    """``serve`` gave up: no trainer spoke for ``idle_timeout`` seconds before all finished,
    or a trainer aborted. The data host exits non-zero instead of billing until the job's
    ``MaxRuntimeInSeconds``."""


class WorkerFailed(DataPlaneError):
    """A worker process of ``serve`` raised or died; the trainers were told (with the text)."""


__all__ = [
    "AuthenticationError",
    "BatchRefused",
    "DataHostLost",
    "DataPlaneError",
    "ProtocolError",
    "TrainersGone",
    "WorkerFailed",
]
