"""What each host of a local job runs, as the framework toolkits launch it.

On the hosts of the distribution groups (``sagemaker_distribution_instance_groups``, else the
toolkit's fallback) with ``sagemaker_torch_distributed_enabled``: ``torchrun`` (``python -m
torch.distributed.run``) with ``--nnodes`` = those hosts, this host's ``--node_rank``, the first
of them as master and ``--nproc_per_node`` = ``processes_per_host`` (1 by default: no GPUs
here). The master is 127.0.0.1 on a free port of this job's own, given even to a one-node world
(``torchrun``'s fixed default port would clash between two jobs). ``pytorchddp`` and ``mpi``
need ``mpirun``; ``smdistributed`` needs GPUs and AWS's library: both fail at once with a reason.
Every other host runs ``python <entry point> <hyperparameters>``.

``HETERO_DATA_ADDRESSES`` maps every host to 127.0.0.1 and a free port of its own, so the data
plane's ``serve`` and ``RemoteBatches`` find each other as host names do on SageMaker.
"""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hetero_constructs.local.hosts.data import JobSetupError
from hetero_constructs.local.hosts.layout import Cluster, Host, split, user_arguments
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


def launch(cluster: Cluster, hyperparameters: Mapping[str, str], python: str) -> Launch:
    """Each host's command and the job's shared variables (``JobSetupError``: it cannot run)."""
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
    mpi = _truthy(framework.get("sagemaker_pytorch_ddp_enabled")) or _truthy(
        framework.get("sagemaker_mpi_enabled")
    )
    if distributed and _truthy(framework.get("sagemaker_distributed_dataparallel_enabled")):
        raise JobSetupError(
            "ClientError: smdistributed data parallel runs only on SageMaker's GPU instances "
            "with AWS's library; a local run has neither. Use torch_distributed to run it here"
        )
    if distributed and mpi and shutil.which("mpirun") is None:
        raise JobSetupError(
            "ClientError: pytorchddp and mpi distributions launch with mpirun, which is not "
            "installed on this machine; install Open MPI (e.g. `apt-get install openmpi-bin`) "
            "or use torch_distributed"
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
        elif host in distributed and mpi:
            commands[host.name] = _mpirun(host, distributed, processes, python, entry, arguments)
        else:
            commands[host.name] = [python, entry, *arguments]
    addresses = {host.name: f"{LOOPBACK}:{free_port()}" for host in cluster.hosts}
    return Launch(commands, {ADDRESSES_ENV: json.dumps(addresses)})


def _mpirun(
    host: Host,
    distributed: list[Host],
    processes: int,
    python: str,
    entry: str,
    arguments: list[str],
) -> list[str]:
    """mpirun on the distribution group's first host for all of them (locally: one machine,
    so every rank starts here); the others wait as the toolkit's workers do (they exit 0)."""
    if host != distributed[0]:
        return [python, "-c", "pass"]
    ranks = processes * len(distributed)
    return ["mpirun", "--allow-run-as-root", "-np", str(ranks), python, entry, *arguments]


__all__ = ["LOOPBACK", "Launch", "free_port", "launch"]
