"""Local training jobs that run: every host of a job as processes of this machine.

``layout``: each host's files and toolkit environment; ``data``: code, channels, checkpoints and
artifacts in the local account's S3; ``launch``: what each host runs; ``engine``: a job started,
watched and ended; ``wrapper``: the standard-library script each host starts through.
"""

from __future__ import annotations

from hetero_constructs.local.hosts.data import FolderStorage, JobSetupError, MotoStorage, Storage
from hetero_constructs.local.hosts.engine import Ending, LocalJob, private_mounts

__all__ = [
    "Ending",
    "FolderStorage",
    "JobSetupError",
    "LocalJob",
    "MotoStorage",
    "Storage",
    "private_mounts",
]
