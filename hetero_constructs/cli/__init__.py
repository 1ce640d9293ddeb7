"""``hetero-train``: plan training jobs, and start, follow, inspect and stop training runs.

Commands live in ``app``; the display that follows a run (``follow.follow_run``) takes any
boto3 clients, so the local runner can show the same screen on moto.
"""

from __future__ import annotations

from hetero_constructs.cli.app import cli, main
from hetero_constructs.cli.aws import RunClients
from hetero_constructs.cli.follow import FollowResult, follow_run, stop_run
from hetero_constructs.cli.plan import timestamped_job_name

__all__ = [
    "FollowResult",
    "RunClients",
    "cli",
    "follow_run",
    "main",
    "stop_run",
    "timestamped_job_name",
]
