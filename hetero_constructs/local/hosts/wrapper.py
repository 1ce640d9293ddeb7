"""Starts one host's command: standard library only, run as a script by this machine's Python.

``wrapper.py [--mount BASE [--at TARGET]] [--exec] -- COMMAND...``: leads the host's process
group (the engine starts it in a new session) and is the subreaper of everything it starts, so a
launcher's workers that leave the group (``torchrun``'s and ``mpirun``'s ranks each get one of
their own) stay its descendants. It asks the kernel for SIGUSR1 when the engine's thread that
started it dies (``prctl(PR_SET_PDEATHSIG)``) and then kills all of them, so no host outlives a
killed CLI. It survives the SIGTERM the engine sends the group (the command gets it), waits for
the command, kills what the command left behind, and exits with its status (``128 + N`` for a
command killed by signal N).

With ``--mount``, it first gives the host a private ``/opt/ml`` (``TARGET``: tests only), bound
to ``BASE``: as root in a mount namespace of its own; as a normal user in a user namespace of its
own as well, its uid and gid mapped to themselves (the files it writes are the user's). Where
``/opt/ml`` does not exist (a normal user cannot create it, and root should leave nothing behind
on this machine), ``/opt`` is covered, in that namespace only, by a read-only tmpfs holding bind
mounts of the real ``/opt``'s entries, plus an empty ``ml`` to bind ``BASE`` on.
With ``--exec``, it mounts and then becomes the command (an MPI rank of another host).
``wrapper.py --probe``: exits 0 when this works here, else says why on stderr.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import stat
import subprocess
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_RDONLY = 1
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
TARGET = "/opt/ml"
#: Settings that refuse a normal user a user namespace: (file, blocking value, what to say).
_USERNS_SETTINGS = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone is 0"),
    ("/proc/sys/user/max_user_namespaces", "0", "user.max_user_namespaces is 0"),
    (
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "AppArmor restricts unprivileged user namespaces "
        "(kernel.apparmor_restrict_unprivileged_userns is 1)",
    ),
)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None) -> None:
    result = _libc().mount(_bytes(source), _bytes(target), _bytes(kind), flags, _bytes(data))
    _check(result, f"mount {source or ''} on {target}")


def userns_blocked() -> str | None:
    """The setting of this machine that refuses a normal user a user namespace, if any."""
    for path, blocking, what in _USERNS_SETTINGS:
        with contextlib.suppress(OSError), open(path) as setting:
            if setting.read().strip() == blocking:
                return what
    return None


def _enter_namespaces() -> None:
    """A mount namespace of this process's own where it may mount: root's alone, else (a normal
    user, or root without CAP_SYS_ADMIN) inside a user namespace mapping its uid and gid to
    themselves, so what it writes belongs to it."""
    libc = _libc()
    if os.geteuid() == 0 and libc.unshare(_CLONE_NEWNS) == 0:
        return
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"cannot create a user namespace: {os.strerror(error)}")
    for name, line in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
        with open(f"/proc/self/{name}", "w") as out:
            out.write(line)


def _make_room(target: str) -> None:
    """``target`` as an empty folder, in this mount namespace only: its parent covered by a
    tmpfs that holds bind mounts of the parent's real entries (symbolic links copied)."""
    parent, name = os.path.split(target.rstrip("/"))
    if not os.path.isdir(parent):
        raise OSError(errno.ENOENT, f"{parent} does not exist on this machine")
    entries = []
    with os.scandir(parent) as found:
        for entry in found:
            link = os.readlink(entry.path) if entry.is_symlink() else None
            entries.append((entry.name, entry.is_dir(follow_symlinks=False), link))
    mode = stat.S_IMODE(os.stat(parent).st_mode)
    real = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)  # reachable once the tmpfs covers it
    try:
        _mount("tmpfs", parent, "tmpfs", 0, f"mode={mode:o},size=1m")
        for entry_name, is_dir, link in entries:
            path = os.path.join(parent, entry_name)
            if link is not None:
                os.symlink(link, path)
                continue
            if is_dir:
                os.mkdir(path)
            else:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            _mount(f"/proc/self/fd/{real}/{entry_name}", path, None, _MS_BIND | _MS_REC, None)
        os.mkdir(os.path.join(parent, name))
        # Read-only, so nothing is written where it would vanish with the namespace.
        _mount(None, parent, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None)
    finally:
        os.close(real)


def private_base(base: str, target: str = TARGET) -> None:
    """This process (and what it starts) sees ``base`` at ``target``, no other process does."""
    if not sys.platform.startswith("linux"):
        raise OSError(errno.ENOSYS, "private mount namespaces need Linux")
    try:
        _enter_namespaces()
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)
        if not os.path.isdir(target):
            _make_room(target)
        _mount(base, target, None, _MS_BIND | _MS_REC, None)
    except OSError as error:
        blocked = userns_blocked() if os.geteuid() != 0 else None
        if blocked is None:
            raise
        raise OSError(error.errno, f"{error.strerror or error}; {blocked}") from error


def _probe() -> int:
    base = os.path.dirname(os.path.abspath(__file__))
    try:
        private_base(base)
        if not os.path.samestat(os.stat(TARGET), os.stat(base)):
            raise OSError(errno.EIO, f"{TARGET} is not the folder bound to it")
    except OSError as error:
        print(error.strerror or str(error), file=sys.stderr)
        return 1
    return 0


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (Linux's /proc; none elsewhere), children first."""
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as source:
                    fields = source.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found: list[int] = []
    wanted = [root]
    while wanted:
        parent = wanted.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found.extend(children)
        wanted.extend(children)
    return found


def _kill_all_below(bound: float = 5.0) -> None:
    """SIGKILL every descendant of this process and reap them (orphans are ours to reap)."""
    deadline = time.monotonic() + bound
    while True:
        below = descendants(os.getpid())
        for pid in below:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        if not below or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _run(argv: list[str]) -> int:
    try:
        command = subprocess.Popen(argv)
    except OSError as error:
        print(f"local run: cannot start {argv[0]!r}: {error}", file=sys.stderr)
        return 127
    # The group's SIGTERM is for the command; this process waits to report how it ended.
    signal.signal(signal.SIGTERM, lambda *_: None)
    while True:  # reaps every orphan it inherits as a subreaper, until the command ends
        pid, status = os.waitpid(-1, 0)
        if pid == command.pid:
            command.returncode = code = os.waitstatus_to_exitcode(status)
            break
    _kill_all_below()
    return 128 - code if code < 0 else code


def _become(argv: list[str], base: str | None, target: str) -> int:
    """``--exec``: this process becomes the command, in ``base``'s mount namespace (an MPI rank
    of another host, started by the first host's ``mpirun``: the host's leader is its
    subreaper already)."""
    try:
        if base is not None:
            private_base(base, target)
            os.chdir(f"{target}/code")
        os.execvp(argv[0], argv)
    except OSError as error:
        print(f"local run: cannot start {argv[0]!r} in {base}: {error}", file=sys.stderr)
    return 125


def main(argv: list[str]) -> int:
    if argv[:1] == ["--probe"]:
        return _probe()
    base, target, replace = None, TARGET, False
    if argv[:1] == ["--mount"]:
        base, argv = argv[1], argv[2:]
    if argv[:1] == ["--at"]:
        target, argv = argv[1], argv[2:]
    if argv[:1] == ["--exec"]:
        replace, argv = True, argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if replace:
        return _become(argv, base, target)
    engine = os.getppid()
    group = os.getpgrp()

    def engine_died(*_: object) -> None:
        _kill_all_below()
        os.killpg(group, signal.SIGKILL)

    signal.signal(signal.SIGUSR1, engine_died)
    if base is not None:
        try:
            private_base(base, target)
        except OSError as error:
            why = error.strerror or str(error)
            print(f"local run: cannot mount this host's {target}: {why}", file=sys.stderr)
            return 125
        os.chdir(f"{target}/code")
    if sys.platform.startswith("linux"):
        libc = _libc()
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
        if os.getppid() != engine:  # the engine died before the request took effect
            os.killpg(group, signal.SIGKILL)
    return _run(argv)


__all__ = ["TARGET", "descendants", "main", "private_base", "userns_blocked"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
