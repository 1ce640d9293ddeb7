"""``hetero-train``: plan training jobs, and start, follow, inspect and stop training runs.

The entry point is ``app.main``; the group and its shared options are ``group``, the commands
``spec_commands``, ``run_command`` (with ``local_run`` for ``run --local``) and ``observe``. The
display that follows a run (``follow.follow_run``) takes any boto3 clients, so a local run shows
the same screen on moto. The only command line of the library: ``local`` is a library it uses.
"""

from __future__ import annotations

from hetero_constructs.cli.app import main
from hetero_constructs.cli.aws import RunClients
from hetero_constructs.cli.follow import FollowResult, follow_run, stop_run
from hetero_constructs.cli.group import cli
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
