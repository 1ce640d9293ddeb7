"""Each host's own /opt/ml: as root (a mount namespace) and as a normal user (a user namespace
too), without creating /opt/ml on this machine or hiding the rest of /opt."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from hetero_constructs.local.hosts import FolderStorage, LocalJob, engine, wrapper
from hetero_constructs.local.hosts.engine import WRAPPER
from tests.fixtures.host_jobs import CODE_KEY, alive, request, sourcedir

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux namespaces")
NOBODY = 65534
ROOT = Path(__file__).resolve().parents[2]

# Whether the kernel lets this process create a user namespace and mount in it: checked on
# its own, so a fault of the wrapper fails the tests instead of skipping them.
USERNS_POSSIBLE = textwrap.dedent("""
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(0x10000000 | 0x00020000) != 0:
        sys.exit("unshare(CLONE_NEWUSER|CLONE_NEWNS): " + os.strerror(ctypes.get_errno()))
    for name, line in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as out:
            out.write(line)
    if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) != 0:
        sys.exit("mount in a user namespace: " + os.strerror(ctypes.get_errno()))
""")


def as_user(uid: int) -> dict[str, object]:
    """``subprocess`` options that run a command as ``uid`` (this process's own: none)."""
    if uid == os.geteuid():
        return {}
    return {"user": uid, "group": uid, "extra_groups": []}


def user_python(uid: int) -> tuple[str, dict[str, str]] | str:
    """A Python that ``uid`` can run and that imports this project, with its environment (this
    one; else this machine's of the same version, given this one's packages), or why none."""
    if uid == os.geteuid():
        return sys.executable, dict(os.environ)
    packages = sysconfig.get_paths()["purelib"]
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), packages]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    version = "{}.{}".format(*sys.version_info[:2])
    check = f"import sys, hetero_constructs.local.hosts; assert sys.version.startswith({version!r})"
    tried = []
    folders = [*os.environ.get("PATH", "").split(os.pathsep), "/usr/bin", "/usr/local/bin"]
    names = [os.path.join(d, n) for d in folders for n in (f"python{version}", "python3")]
    for python in dict.fromkeys([sys.executable, *(n for n in names if os.path.isfile(n))]):
        try:
            probe = subprocess.run(
                [python, "-c", check], capture_output=True, text=True, timeout=60,
                env=environment, **as_user(uid),  # type: ignore[call-overload]
            )  # fmt: skip
        except OSError as error:
            tried.append(f"{python}: {error.strerror}")
            continue
        if probe.returncode == 0:
            return python, environment
        tried.append(f"{python}: {(probe.stderr.strip().splitlines() or ['fails'])[-1]}")
    return f"no Python {version} that uid {uid} can run imports this project ({'; '.join(tried)})"


def userns_refusal(uid: int) -> str | None:
    """Why ``uid`` cannot mount in a user namespace here (None: it can)."""
    found = user_python(uid)
    if isinstance(found, str):
        return found
    python, environment = found
    probe = subprocess.run(
        [python, "-c", USERNS_POSSIBLE], capture_output=True, text=True, timeout=60,
        env=environment, **as_user(uid),  # type: ignore[call-overload]
    )  # fmt: skip
    if probe.returncode != 0:
        return (probe.stderr.strip().splitlines() or ["refused"])[-1]
    return None


def normal_user() -> int:
    """The unprivileged user the tests run as: ``nobody`` for root, else this user."""
    return NOBODY if os.geteuid() == 0 else os.geteuid()


@pytest.fixture
def shared_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder ``normal_user()`` can reach and write (pytest's own are root's alone)."""
    if os.geteuid() != 0:
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="hetero-userns-"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def make_opt(folder: Path) -> Path:
    """A stand-in for /opt with no ``ml``: a folder of tools, a file and a symbolic link."""
    opt = folder / "opt"
    (opt / "tools").mkdir(parents=True)
    (opt / "tools" / "python").write_text("a tool")
    (opt / "notes.txt").write_text("notes")
    (opt / "latest").symlink_to("tools")
    return opt


SEE_AND_WRITE = textwrap.dedent("""
    import json, os, sys
    opt = sys.argv[1]
    seen = {
        "uid": os.getuid(),
        "entries": sorted(os.listdir(opt)),
        "tool": open(os.path.join(opt, "latest", "python")).read(),
        "notes": open(os.path.join(opt, "notes.txt")).read(),
        "cwd": os.getcwd(),
    }
    with open(os.path.join(opt, "ml", "written.txt"), "w") as out:
        out.write("by the host")
    try:
        open(os.path.join(opt, "stray.txt"), "w").close()
        seen["stray"] = "written"
    except OSError as error:
        seen["stray"] = error.strerror
    print(json.dumps(seen))
""")


@pytest.mark.parametrize("who", ["this user", "a normal user"])
def test_a_missing_mount_point_is_made_in_the_namespace_alone(
    shared_folder: Path, who: str
) -> None:
    """Where the target does not exist, the host still gets it, sees the rest of its parent,
    writes its files as itself, and nothing is left on this machine."""
    uid = os.geteuid() if who == "this user" else normal_user()
    if who == "a normal user" and os.geteuid() != 0:
        pytest.skip("this user is a normal user already (the other case)")
    if uid != 0 and (why := userns_refusal(uid)) is not None:
        pytest.skip(f"uid {uid} cannot mount in a user namespace here: {why}")
    opt = make_opt(shared_folder)
    base = shared_folder / "base"
    (base / "code").mkdir(parents=True)
    os.chown(base, uid, uid)
    os.chown(base / "code", uid, uid)
    python, environment = user_python(uid)  # type: ignore[misc]
    result = subprocess.run(
        [python, str(WRAPPER), "--mount", str(base), "--at", str(opt / "ml"), "--",
         python, "-c", SEE_AND_WRITE, str(opt)],
        capture_output=True, text=True, timeout=60, env=environment,
        **as_user(uid),  # type: ignore[call-overload]
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["uid"] == uid
    assert seen["entries"] == ["latest", "ml", "notes.txt", "tools"]
    assert (seen["tool"], seen["notes"]) == ("a tool", "notes")
    assert seen["cwd"] == str(opt / "ml" / "code")
    assert seen["stray"] == "Read-only file system"
    written = base / "written.txt"
    assert written.read_text() == "by the host" and written.stat().st_uid == uid
    assert sorted(p.name for p in opt.iterdir()) == ["latest", "notes.txt", "tools"]


def test_the_probe_creates_nothing_and_says_why_it_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Probing needs no /opt/ml of this machine (where it has none, none is made); a missing
    parent is named."""
    existed = os.path.exists(wrapper.TARGET)
    monkeypatch.setattr(engine, "_mounts", None)  # probe again
    mounted, note = engine.private_mounts()
    assert os.path.exists(wrapper.TARGET) == existed
    assert note.startswith("each host sees its own /opt/ml" if mounted else "cannot give each")
    missing = subprocess.run(
        [sys.executable, str(WRAPPER), "--mount", str(tmp_path), "--at",
         str(tmp_path / "none" / "ml"), "--", "true"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 125
    assert "does not exist on this machine" in missing.stderr or "namespace" in missing.stderr


def test_a_blocked_user_namespace_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = {
        "/proc/sys/kernel/unprivileged_userns_clone": "1\n",
        "/proc/sys/user/max_user_namespaces": "0\n",
    }
    real_open = open

    def fake_open(path: str, *args: object, **kwargs: object) -> object:
        if path in settings:
            return io.StringIO(settings[path])
        if path.startswith("/proc/sys/"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", fake_open)
    assert wrapper.userns_blocked() == "user.max_user_namespaces is 0"
    settings["/proc/sys/user/max_user_namespaces"] = "15000\n"
    settings["/proc/sys/kernel/apparmor_restrict_unprivileged_userns"] = "1\n"
    assert "AppArmor" in (wrapper.userns_blocked() or "")
    del settings["/proc/sys/kernel/apparmor_restrict_unprivileged_userns"]
    assert wrapper.userns_blocked() is None


# Each host writes into the fixed paths, waits for the other, then lists what it sees.
FIXED_PATHS_SCRIPT = """
import json, os, sys, time
host = os.environ["SM_CURRENT_HOST"]
marks = sys.argv[sys.argv.index("--marks") + 1]
config = json.load(open("/opt/ml/input/config/resourceconfig.json"))
assert config["current_host"] == host, config
with open(f"/opt/ml/model/{host}.txt", "w") as out:
    out.write(str(os.getuid()))
with open(os.path.join(marks, host + ".pid"), "w") as out:
    out.write(str(os.getpid()))
deadline = time.monotonic() + 60
while len([n for n in os.listdir(marks) if n.endswith(".pid")]) < 2:
    if time.monotonic() > deadline:
        sys.exit("the other host never wrote its file")
    time.sleep(0.02)
seen = {"model": sorted(os.listdir("/opt/ml/model")), "base": os.environ.get("SAGEMAKER_BASE_DIR")}
print("seen=" + json.dumps(seen), flush=True)
"""

RUN_AS_USER = """
import json, sys
from pathlib import Path
sys.path[:0] = [{root!r}]
from hetero_constructs.local.hosts import FolderStorage, LocalJob, private_mounts
from tests.fixtures.host_jobs import request
mounted, note = private_mounts()
folder = Path({folder!r})
storage = FolderStorage(folder / "s3")
storage.write("bucket", "code/sourcedir.tar.gz", (folder / "code.tar.gz").read_bytes())
lines = []
job = LocalJob("fixed", request("fixed", "bucket", groups=[("train", 2)],
               hyperparameters={{"marks": str(folder / "marks")}}), storage, folder / "job",
               on_line=lambda host, at, line: lines.append([host, line]),
               on_stage=lambda *a: None, grace=5.0)
job.start()
assert job.wait(120), "the job did not end"
print(json.dumps({{"mounted": mounted, "note": note, "status": job.ending.status,
                  "reason": job.ending.reason, "lines": lines}}))
"""


def test_a_normal_users_hosts_each_see_only_their_own_opt_ml(shared_folder: Path) -> None:
    """The local job engine run by a normal user: a script that uses the fixed /opt/ml paths
    works, neither host sees the other's files, and what they write is the user's."""
    uid = normal_user()
    if (why := userns_refusal(uid)) is not None:
        pytest.skip(f"uid {uid} cannot mount in a user namespace here: {why}")
    script = shared_folder / "script"
    script.mkdir()
    (script / "train.py").write_text(FIXED_PATHS_SCRIPT)
    (shared_folder / "code.tar.gz").write_bytes(sourcedir(script))
    (shared_folder / "marks").mkdir()
    for path in (shared_folder, shared_folder / "marks"):
        os.chown(path, uid, uid)
    driver = RUN_AS_USER.format(root=str(ROOT), folder=str(shared_folder))
    existed = os.path.exists(wrapper.TARGET)
    python, environment = user_python(uid)  # type: ignore[misc]
    result = subprocess.run(
        [python, "-c", driver], capture_output=True, text=True, timeout=180, env=environment,
        **as_user(uid),  # type: ignore[call-overload]
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["mounted"], outcome["note"]
    assert outcome["status"] == "Completed", outcome["reason"]
    seen = {
        host: json.loads(line.removeprefix("seen="))
        for host, line in outcome["lines"]
        if line.startswith("seen=")
    }
    assert seen == {
        "algo-1": {"model": ["algo-1.txt"], "base": None},
        "algo-2": {"model": ["algo-2.txt"], "base": None},
    }
    model = shared_folder / "s3" / "bucket" / "output" / "fixed" / "output" / "model.tar.gz"
    with tarfile.open(fileobj=io.BytesIO(model.read_bytes())) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert files == {"algo-1.txt": str(uid).encode(), "algo-2.txt": str(uid).encode()}
    for host in ("algo-1", "algo-2"):
        written = next((shared_folder / "job").glob(f"{host}/model/{host}.txt"))
        assert written.stat().st_uid == uid
    pids = [int(p.read_text()) for p in (shared_folder / "marks").glob("*.pid")]
    assert len(pids) == 2 and not [pid for pid in pids if alive(pid)]
    assert os.path.exists(wrapper.TARGET) == existed  # nothing made on this machine


FOLDER_SCRIPT = """
import json, os
base = os.environ["SAGEMAKER_BASE_DIR"]
seen = {"model_dir": os.environ["SM_MODEL_DIR"], "cwd": os.getcwd(), "base": base}
name = os.environ["SM_CURRENT_HOST"] + ".json"
with open(os.path.join(os.environ["SM_MODEL_DIR"], name), "w") as out:
    json.dump(seen, out)
"""


def test_where_no_host_can_have_opt_ml_each_works_in_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback: the base folder named by SAGEMAKER_BASE_DIR and the SM_* variables."""
    monkeypatch.setattr(engine, "_mounts", (False, "cannot here (a test)"))
    script = tmp_path / "script"
    script.mkdir()
    (script / "train.py").write_text(FOLDER_SCRIPT)
    storage = FolderStorage(tmp_path / "s3")
    storage.write("bucket", CODE_KEY, sourcedir(script))
    job = LocalJob(
        "folders", request("folders", "bucket", groups=[("train", 2)]), storage,
        tmp_path / "job", on_line=lambda *_: None, on_stage=lambda *_: None,
    )  # fmt: skip
    job.start()
    assert job.wait(120) and job.ending is not None
    assert job.ending.status == "Completed", job.ending.reason
    for host in ("algo-1", "algo-2"):
        base = tmp_path / "job" / host
        seen = json.loads((base / "model" / f"{host}.json").read_text())
        assert seen == {"model_dir": f"{base}/model", "cwd": f"{base}/code", "base": str(base)}
