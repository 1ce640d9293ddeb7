"""Fuzzing spec files: mutated valid specs give violations or a valid request, fast, nothing else.

Each example starts from a valid spec, mutates it (wrong types at any depth, unknown keys,
deleted keys, huge and deep values, duplicate keys, alias bombs, broken syntax), writes it as
a JSON or YAML file and reads it as the CLI and the constructs do. Any Python error other than
``SpecValidationError`` fails the test, and so does a file that takes a second or more of
CPU time (or hangs).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetero_constructs.planning import plan
from hetero_constructs.service import request_validator
from hetero_constructs.spec.file.reader import read_spec_file
from hetero_constructs.spec.violations import SpecValidationError, Violation
from tests.fixtures.specs import BASE, HOMOGENEOUS, spec_dict

# CPU seconds per file; a reader that has not answered after HANG_SECONDS of wall time hangs.
SECONDS_PER_FILE = 1.0
HANG_SECONDS = 30.0
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

VALID_SPECS = [
    BASE,
    spec_dict(HOMOGENEOUS),
    spec_dict(
        {
            "hyperparameters": {"epochs": 3, "lr": 0.001, "layers": [64, 32], "name": "run"},
            "environment": {"NCCL_DEBUG": "WARN"},
            "tags": [{"Key": "team", "Value": "ml"}],
            "metric_definitions": [{"Name": "loss", "Regex": "loss=([0-9.]+)"}],
            "channels": {
                "train": {"s3_uri": "s3://bucket/train/", "instance_groups": ["data"]},
                "eval": {"s3_uri": "s3://bucket/eval/", "instance_groups": ["data", "gpu"]},
            },
            "use_spot_instances": True,
            "max_wait": 172_800,
            "checkpoint_s3_uri": "s3://bucket/checkpoints/",
        }
    ),
]

# Raw text put where a placeholder string was serialized: what json/yaml cannot emit themselves.
RAW = {
    "huge integer": "9" * 5_000,
    "wide integer": str(2**70),
    "int32 edge": str(2**31),
    "deep list": "[" * 3_000 + "]" * 3_000,
    "just too deep": "[" * 40 + "]" * 40,
    "duplicate keys": '{"epochs": 1, "epochs": 2}',
}
HOSTILE_VALUES = st.sampled_from(
    [
        None,
        True,
        -1,
        0,
        2**31,
        2**63,
        1e30,
        1.5,
        "",
        " ",
        "x" * 3_000,
        "tab\there\nnewline",
        "\ud7ff\u2028",
        "allreduce",
        "s3://Bad_Bucket!/x",
        "s3://bucket/train-nightly/",
        [],
        {},
        [None],
        {"Key": ["a"], "Value": {"b": 1}},
        {"enabled": "yes"},
        [[[["nested"]]]],
        *(f"__RAW_{name}__" for name in RAW),
    ]
)
UNKNOWN_KEYS = st.sampled_from(
    ["count", "instanceCount", "Instance_Count", "procesess_per_host", "s3uri", "Key ", "zz", ""]
)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value in the spec (map keys and list indexes)."""
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from paths(child, (*prefix, index))


def parent_and_key(data: Any, path: tuple[Any, ...]) -> tuple[Any, Any]:
    node = data
    for step in path[:-1]:
        node = node[step]
    return node, path[-1]


@st.composite
def mutated_specs(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(draw(st.sampled_from(VALID_SPECS)))
    for _ in range(draw(st.integers(0, 3))):
        targets = [p for p in paths(data) if p]
        path = draw(st.sampled_from(targets))
        parent, key = parent_and_key(data, path)
        action = draw(st.sampled_from(["replace", "unknown key", "delete", "wrap"]))
        # Copies: later mutations must not change the strategy's own values.
        if action == "replace":
            parent[key] = copy.deepcopy(draw(HOSTILE_VALUES))
        elif action == "unknown key":
            container = parent[key] if isinstance(parent[key], dict) else parent
            if isinstance(container, dict):
                container[draw(UNKNOWN_KEYS)] = copy.deepcopy(draw(HOSTILE_VALUES))
        elif action == "delete":
            del parent[key]
        else:
            parent[key] = draw(st.sampled_from([[parent[key]], {"value": parent[key]}]))
    return data


def with_raw_values(text: str, quoted: bool) -> str:
    for name, raw in RAW.items():
        placeholder = f"__RAW_{name}__"
        text = text.replace(f'"{placeholder}"' if quoted else placeholder, raw)
    return text


def alias_bomb(section: str) -> str:
    lines = [f"{section}:", "  l0: &l0 [a, a, a, a, a, a, a, a]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 8)}]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


@st.composite
def spec_files(draw: st.DrawFn) -> tuple[str, str]:
    """(file name, text) of a mutated spec, sometimes with its text corrupted."""
    data = draw(mutated_specs())
    if draw(st.booleans()):
        name, text = "spec.json", with_raw_values(json.dumps(data), quoted=True)
    else:
        name, text = "spec.yaml", with_raw_values(yaml.safe_dump(data, width=10_000), quoted=False)
        if draw(st.integers(0, 5)) == 0:
            section = draw(st.sampled_from(["hyperparameters", "tags", "environment"]))
            kept = {k: v for k, v in data.items() if k != section}
            text = yaml.safe_dump(kept, width=10_000) + alias_bomb(section)
        if draw(st.integers(0, 7)) == 0:  # a duplicate top-level key
            text += "job_name: again\n"
    if draw(st.integers(0, 3)) == 0 and text:
        position = draw(st.integers(0, len(text) - 1))
        edit = draw(st.sampled_from(["cut", "insert", "delete"]))
        if edit == "cut":
            text = text[:position]
        elif edit == "insert":
            text = (
                text[:position]
                + draw(st.sampled_from(list("{}[]:,\"'\t&*!%@-#|>")))
                + text[position:]
            )
        else:
            text = text[:position] + text[position + 1 :]
    return name, text


def read(path: Path) -> tuple[dict[str, Any] | None, list[Violation]]:
    """What the CLI would print: the request, or every violation."""
    try:
        reading = read_spec_file(path)
    except SpecValidationError as error:
        return None, list(error.violations)
    if reading.spec is None:
        return None, list(reading.violations)
    result = plan(reading.spec)
    return result.request, [*reading.violations, *result.violations]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(file=spec_files())
def test_mutated_spec_files_give_violations_or_a_valid_request(
    folder: Path, file: tuple[str, str]
) -> None:
    name, text = file
    path = folder / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    outcome: list[Any] = []

    def measured() -> None:
        start = time.thread_time()  # CPU time: other processes on the machine do not count
        result = read(path)
        outcome.append((result, time.thread_time() - start))

    # In a thread, so that a reader that blocks or spins fails the test instead of hanging it.
    worker = threading.Thread(target=measured, daemon=True)
    worker.start()
    worker.join(HANG_SECONDS)
    assert outcome, ("still reading after", HANG_SECONDS, name, text[:300])
    (request, violations), seconds = outcome[0]
    assert seconds < SECONDS_PER_FILE, (seconds, name, text[:300])
    if violations:
        for violation in violations:
            assert isinstance(violation, Violation) and violation.rule
            assert isinstance(violation.path, str)
            str(violation).encode("utf-8")  # printable, whatever the input held
        return
    assert request is not None
    assert request_validator.botocore_validation_errors(request) is None
    assert request_validator.check_request(request) == []


def test_the_fuzzer_reaches_both_outcomes(folder: Path) -> None:
    """The property above means little unless some mutated files are still valid."""
    outcomes: list[bool] = []

    @settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @given(file=spec_files())
    def sample(file: tuple[str, str]) -> None:
        path = folder / f"sample-{file[0]}"
        path.write_text(file[1], encoding="utf-8", errors="surrogatepass")
        outcomes.append(read(path)[0] is not None)

    sample()
    assert 0 < sum(outcomes) < len(outcomes), outcomes
