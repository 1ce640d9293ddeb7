"""The ``mpirun`` command lines of the sagemaker-training toolkit's MPI runners, for one machine.

``mpi`` (``sagemaker_mpi_enabled``) runs as the toolkit's ``mpi.MasterRunner``; ``pytorchddp``
and smdistributed data parallel (``sagemaker_distributed_dataparallel_enabled``, which the SDK
sends for both, or the legacy ``sagemaker_pytorch_ddp_enabled``) as its
``smdataparallel.SMDataParallelRunner``, which the PyTorch toolkit picks for them, and which
appends ``smddprun`` only where AWS's library installed it: not here, so the script runs under
``mpirun`` alone, as the toolkit runs it without the library. Both on the distribution group's
first host, for every rank of the group; the group's other hosts wait as the toolkit's workers
do. The options, their order and values are
the toolkit's (``processes_per_host``, ``sagemaker_mpi_num_processes``, the custom MPI options
with their ``--NCCL_DEBUG``), but where one machine differs:

- ``--host localhost:<slots>`` for the group's hosts' slots (the hosts' names do not resolve here,
  and every rank starts on this machine), the loopback interface ``lo`` for ``eth0``, and
  ``127.0.0.1`` for the master's name;
- where hosts get their own ``/opt/ml``, one app context per host (``on_each_host``): each
  host's ranks start in that host's mount namespace, as they start in its container there;
- ``--bind-to``/``--map-by`` with two dashes (Open MPI 5 reads ``-bind-to none`` as a program);
- no ``-x NAME`` per variable nor ``LD_PRELOAD`` of the toolkit's ``gethostname`` shim: the ranks
  start on this machine with the host's whole environment (all see the first host's, as the
  toolkit's ``-x`` exports give them on SageMaker); ``-x LD_LIBRARY_PATH`` only when it is set;
- no EFA or model-parallel variables (no EFA here; AWS's model parallel library is not
  installed);
- ``python -m mpi4py`` (an uncaught exception aborts every rank) where the job's Python has
  ``mpi4py``, else plain ``python``: Open MPI ends the job when a rank exits non-zero either way.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from hetero_constructs.local.hosts.data import JobSetupError

#: The interface the ranks talk over here (SageMaker's hosts: ``eth0``).
LOCAL_INTERFACE = "lo"
_SMDDP_SERVER_PORT = 7592  # the toolkit's SMDATAPARALLEL_SERVER_PORT


def custom_options(text: str) -> tuple[str, list[str]]:
    """``(NCCL_DEBUG, other options)`` from the custom MPI options, parsed as the toolkit parses
    them (``--NCCL_DEBUG X`` overrides ``INFO``; everything else is passed on as it is)."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("--NCCL_DEBUG", default="INFO", type=str)
    try:
        known, rest = parser.parse_known_args(text.split())
    except argparse.ArgumentError as error:
        raise JobSetupError(
            f"ClientError: the custom MPI options {text!r} cannot be read as the toolkit reads "
            f"them ({error}): give --NCCL_DEBUG a value, e.g. '--NCCL_DEBUG WARN'"
        ) from error
    return str(known.NCCL_DEBUG), rest


def _common(slots: int, ranks: int) -> list[str]:
    return ["mpirun", "--host", f"localhost:{slots}", "-np", str(ranks), "--allow-run-as-root"]


def _library_path() -> list[str]:
    return ["-x", "LD_LIBRARY_PATH"] if "LD_LIBRARY_PATH" in os.environ else []


def mpi_command(
    hosts: int, framework: Mapping[str, Any], python: list[str], entry: list[str]
) -> list[str]:
    """``mpi.MasterRunner``'s command for a group of ``hosts`` hosts (``python``: the
    interpreter and its options, ``entry``: the entry point and its arguments)."""
    per_host = int(framework.get("sagemaker_mpi_num_of_processes_per_host") or 1)
    ranks = int(framework.get("sagemaker_mpi_num_processes") or per_host * hosts)
    debug, extra = custom_options(str(framework.get("sagemaker_mpi_custom_mpi_options") or ""))
    lo = LOCAL_INTERFACE
    return [
        *_common(per_host * hosts, ranks),
        "--display-map", "--tag-output",
        "-mca", "btl_tcp_if_include", lo,
        "-mca", "oob_tcp_if_include", lo,
        "-mca", "plm_rsh_no_tree_spawn", "1",
        "--bind-to", "none",
        "--map-by", "slot",
        "-mca", "pml", "ob1",
        "-mca", "btl", "^openib",
        "-mca", "orte_abort_on_non_zero_status", "1",
        "-mca", "btl_vader_single_copy_mechanism", "none",
        "-x", "NCCL_MIN_NRINGS=4",
        "-x", f"NCCL_SOCKET_IFNAME={lo}",
        "-x", f"NCCL_DEBUG={debug}",
        *_library_path(),
        "-x", "PATH",
        *extra,
        *python, *entry,
    ]  # fmt: skip


def smdataparallel_command(
    hosts: int,
    framework: Mapping[str, Any],
    instance_type: str,
    python: list[str],
    entry: list[str],
) -> list[str]:
    """``smdataparallel.SMDataParallelRunner``'s command (without ``smddprun``: AWS's library
    is not installed here) for a group of ``hosts`` hosts (``instance_type``: the first host's,
    where the hyperparameters name none)."""
    per_host = int(framework.get("sagemaker_mpi_num_of_processes_per_host") or 1)
    instance_type = str(framework.get("sagemaker_instance_type") or instance_type)
    options = framework.get("sagemaker_distributed_dataparallel_custom_mpi_options") or ""
    debug, extra = custom_options(str(options))
    lo = LOCAL_INTERFACE
    mode = "SMDATAPARALLEL_USE_HOMOGENEOUS=1" if hosts > 1 else "SMDATAPARALLEL_USE_SINGLENODE=1"
    server = (
        [
            "-x", "SMDATAPARALLEL_SERVER_ADDR=127.0.0.1",
            "-x", f"SMDATAPARALLEL_SERVER_PORT={_SMDDP_SERVER_PORT}",
            "-x", f"SAGEMAKER_INSTANCE_TYPE={instance_type}",
        ]
        if hosts > 1
        else []
    )  # fmt: skip
    return [
        *_common(per_host * hosts, per_host * hosts),
        "--tag-output", "--oversubscribe",
        "-mca", "btl_tcp_if_include", lo,
        "-mca", "oob_tcp_if_include", lo,
        "-mca", "plm_rsh_no_tree_spawn", "1",
        "-mca", "pml", "ob1",
        "-mca", "btl", "^openib",
        "-mca", "orte_abort_on_non_zero_status", "1",
        "-mca", "btl_vader_single_copy_mechanism", "none",
        "-mca", "plm_rsh_num_concurrent", str(hosts),
        "-x", f"NCCL_SOCKET_IFNAME={lo}",
        "-x", f"NCCL_DEBUG={debug}",
        *_library_path(),
        "-x", "PATH",
        "-x", mode,
        "-x", "FI_PROVIDER=efa",
        "-x", "RDMAV_FORK_SAFE=1",
        *extra,
        *server,
        *python, *entry,
    ]  # fmt: skip


def on_each_host(command: list[str], program: int, prefixes: list[list[str]]) -> list[str]:
    """``command`` with each host's ranks started through its own prefix (into that host's
    ``/opt/ml``): one app context per host, ``-np`` split as ``--map-by slot`` places the ranks
    over the hosts' slots (``program``: how many last words are the ranks' program). Unchanged
    where no prefix is given or the ranks do not fill the slots exactly."""
    at = command.index("-np")
    ranks, hosts = int(command[at + 1]), len(prefixes)
    slots = int(command[command.index("--host") + 1].rpartition(":")[2])
    if not any(prefixes) or ranks != slots or slots % hosts:
        return command
    head, ranks_program = command[:at] + command[at + 2 : -program], command[-program:]
    contexts: list[str] = []
    for prefix in prefixes:
        contexts += [*([":"] if contexts else []), "-np", str(slots // hosts)]
        contexts += [*prefix, *ranks_program]
    return head + contexts


__all__ = [
    "LOCAL_INTERFACE",
    "custom_options",
    "mpi_command",
    "on_each_host",
    "smdataparallel_command",
]
