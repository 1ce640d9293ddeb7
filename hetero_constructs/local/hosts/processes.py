"""Every process of a local host, whatever process group or session it moved to.

A host's command runs in a process group of its own, but a launcher may move its children out
of it: torchrun starts each worker in a session of its own (``start_new_session``), so a signal
to the host's group never reaches the workers, and a killed torchrun leaves them running. So
every process of a host carries the host's mark in its environment (``HOST_MARK_ENV``, a value
of its own per host and start, inherited by whatever it starts); on Linux ``/proc`` finds them
by it, wherever they moved. Elsewhere nothing is found (the process group is all there is).
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Collection
from pathlib import Path

#: The variable that marks every process of one host (see the module's docstring).
HOST_MARK_ENV = "HETERO_LOCAL_HOST_MARK"
_PROC = Path("/proc")


def new_mark() -> str:
    """A mark no other host of any job on this machine has."""
    return uuid.uuid4().hex


def marked(marks: Collection[str]) -> list[int]:
    """The live processes (zombies aside) whose environment carries one of ``marks``."""
    if not marks or not _PROC.is_dir():
        return []
    wanted = [f"{HOST_MARK_ENV}={mark}".encode() for mark in marks]
    found = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone, or not ours to read
        if state != "Z" and any(mark in variables for mark in wanted):
            found.append(int(entry.name))
    return found


def kill_marked(marks: Collection[str]) -> list[int]:
    """SIGKILL to every live process that carries one of ``marks``; their pids."""
    found = marked(marks)
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return found


def still_running(pids: Collection[int]) -> list[int]:
    """Those of ``pids`` that have not died yet (a zombie has). A dying process loses its
    environment before it is a zombie: wait on the pids that ``kill_marked`` signalled."""
    running = []
    for pid in pids:
        with contextlib.suppress(OSError, IndexError):
            if (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                running.append(pid)
    return running


__all__ = ["HOST_MARK_ENV", "kill_marked", "marked", "new_mark", "still_running"]
