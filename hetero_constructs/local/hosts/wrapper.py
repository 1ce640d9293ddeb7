"""Starts one host's command: standard library only, run as a script by this machine's Python.

``wrapper.py [--mount BASE] -- COMMAND...``: leads the host's process group (the engine starts
it in a new session), asks the kernel for SIGUSR1 when the engine's thread that started it dies
(``prctl(PR_SET_PDEATHSIG)``) and then kills the whole group and every process that carries the
host's mark (``HETERO_LOCAL_HOST_MARK``: those that left the group, as torchrun's workers do),
so no host outlives a killed CLI.
With ``--mount``, it first enters a private mount namespace and binds ``BASE`` at ``/opt/ml``.
It survives the SIGTERM the engine sends the group (the command gets it), waits for the command
and exits with its status (``128 + N`` for a command killed by signal N).
``wrapper.py --probe``: exits 0 when a private ``/opt/ml`` can be mounted here, else says why.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
_CLONE_NEWNS = 0x00020000
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_TARGET = "/opt/ml"
_MARK = "HETERO_LOCAL_HOST_MARK"  # processes.HOST_MARK_ENV (this script imports nothing of ours)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _private_mount(base: str) -> None:
    libc = _libc()
    _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")
    _check(libc.mount(base.encode(), _TARGET.encode(), None, _MS_BIND, None), f"bind {_TARGET}")


def _probe() -> int:
    if not sys.platform.startswith("linux"):
        print("private mount namespaces need Linux", file=sys.stderr)
        return 1
    if not os.path.isdir(_TARGET):
        print(f"{_TARGET} does not exist on this machine", file=sys.stderr)
        return 1
    try:
        _private_mount(os.path.dirname(os.path.abspath(__file__)))
    except OSError as error:
        print(str(error), file=sys.stderr)
        return 1
    return 0


def _kill_host(group: int) -> None:
    """SIGKILL to the processes that carry this host's mark, then to its process group."""
    mark = os.environ.get(_MARK)
    if mark and os.path.isdir("/proc"):
        wanted = f"{_MARK}={mark}".encode()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    with open(f"/proc/{entry}/environ", "rb") as variables:
                        if wanted in variables.read().split(b"\0"):
                            os.kill(int(entry), signal.SIGKILL)
                except OSError:
                    continue  # gone, or not ours
    os.killpg(group, signal.SIGKILL)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--probe"]:
        return _probe()
    base = None
    if argv[:1] == ["--mount"]:
        base, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    group = os.getpgrp()
    signal.signal(signal.SIGUSR1, lambda *_: _kill_host(group))
    if sys.platform.startswith("linux"):
        _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
        if os.getppid() == 1:  # the engine died before the request took effect
            _kill_host(group)
    if base is not None:
        try:
            _private_mount(base)
        except OSError as error:
            print(f"local run: cannot mount this host's {_TARGET}: {error}", file=sys.stderr)
            return 125
        os.chdir(f"{_TARGET}/code")
    try:
        command = subprocess.Popen(argv)
    except OSError as error:
        print(f"local run: cannot start {argv[0]!r}: {error}", file=sys.stderr)
        return 127
    # The group's SIGTERM is for the command; this process waits to report how it ended.
    signal.signal(signal.SIGTERM, lambda *_: None)
    code = command.wait()
    return 128 - code if code < 0 else code


__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
