"""Hostile spec input gives violations with a rule id and a path: never a Python error or a hang.

Each case of issue 9 item 7 is here, through spec files (JSON and YAML), ``read_spec`` and the
Python API.
"""

from __future__ import annotations

import gc
import io
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from hetero_constructs.planning import plan
from hetero_constructs.spec.cluster import InstanceGroup, TrainingChannel
from hetero_constructs.spec.distribution import (
    DistributedTraining,
    Launcher,
    LauncherConfig,
    SmddpCollective,
)
from hetero_constructs.spec.fields import MAX_NESTING_DEPTH
from hetero_constructs.spec.file.reader import read_spec, read_spec_file
from hetero_constructs.spec.file.rules import MAX_SPEC_FILE_BYTES, MAX_YAML_NODES
from hetero_constructs.spec.training import TrainingSpec
from hetero_constructs.spec.violations import SpecValidationError, Violation, render_value
from tests.fixtures.blocking import finishes
from tests.fixtures.specs import BASE, spec_dict, violations_of

# "Well under a second" of CPU time, far below a hang.
QUICK = 0.5


def file_violations(tmp_path: Path, name: str, text: str) -> list[Violation]:
    """Every violation of a spec file, as the CLI and the constructs get them."""
    path = tmp_path / name
    path.write_text(text)
    try:
        reading = read_spec_file(path)
    except SpecValidationError as error:
        return list(error.violations)
    if reading.spec is None:
        return list(reading.violations)
    return [*reading.violations, *plan(reading.spec).violations]


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """The result and the CPU seconds it took (the machine's load does not count).

    Only the call's own work counts: it runs once untimed first (what it loads on first use),
    and the objects earlier tests left are frozen out of the garbage collector's passes. A
    full collection over a test worker's heap took 0.6 s of a 0.5 s bound in one CI run.
    """
    call()
    gc.collect()
    gc.freeze()
    try:
        start = time.thread_time()
        result = call()
        return result, time.thread_time() - start
    finally:
        gc.unfreeze()


def one(violations: list[Violation], rule: str) -> Violation:
    matching = [v for v in violations if v.rule == rule]
    assert matching, violations
    return matching[0]


def as_json_and_yaml(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [("spec.json", json.dumps(data)), ("spec.yaml", yaml.safe_dump(data))]


# -- Unknown keys at any depth ------------------------------------------------------------------

GROUP = {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2}


@pytest.mark.parametrize(
    ("data", "path", "meant"),
    [
        (spec_dict({"instanceCount": 2}), "instanceCount", "instance_count"),
        (
            spec_dict(
                {"instance_groups": [{"name": "gpu", "instance_type": "ml.c5.xlarge", "count": 2}]}
            ),
            "instance_groups[0].count",
            "instance_count",
        ),
        (
            spec_dict({"channels": {"train": {"s3uri": "s3://bucket/t"}}}),
            "channels.train.s3uri",
            "s3_uri",
        ),
        (
            spec_dict({"distribution": {"mpi": {"enabled": True, "procesess_per_host": 8}}}),
            "distribution.mpi.procesess_per_host",
            "processes_per_host",
        ),
        (
            spec_dict({"distribution": {"smdistributed": {"dataparallel": {"enabeld": True}}}}),
            "distribution.smdistributed.dataparallel.enabeld",
            "enabled",
        ),
        (
            spec_dict(
                {
                    "distribution": {
                        "smdistributed": {"modelparallel": {"enabled": True, "parameter": {}}}
                    }
                }
            ),
            "distribution.smdistributed.modelparallel.parameter",
            "parameters",
        ),
        (spec_dict({"tags": [{"Key": "a", "value": "b"}]}), "tags[0].value", "Value"),
        (
            spec_dict({"metric_definitions": [{"Name": "loss", "regex": "x"}]}),
            "metric_definitions[0].regex",
            "Regex",
        ),
    ],
)
def test_unknown_keys_at_any_depth_name_the_likely_key(
    data: dict[str, Any], path: str, meant: str, tmp_path: Path
) -> None:
    for name, text in as_json_and_yaml(data):
        violation = one(file_violations(tmp_path, name, text), "SPEC-UNKNOWN-KEY")
        assert violation.path == path
        assert violation.fix == f"did you mean '{meant}'?"
    assert one(violations_of(data), "SPEC-UNKNOWN-KEY").path == path


def test_unknown_key_without_a_likely_key_says_remove_it() -> None:
    violation = one(violations_of(spec_dict({"zzz": 1})), "SPEC-UNKNOWN-KEY")
    assert violation.fix == "remove the key"


@pytest.mark.parametrize(
    ("call", "path", "fix"),
    [
        (lambda: InstanceGroup("gpu", "ml.p4d.24xlarge", count=2), "count", "instance_count"),
        (
            lambda: TrainingSpec(entry_point="train.py", hyperparameter={"lr": 1}),
            "hyperparameter",
            "hyperparameters",
        ),
        (
            lambda: TrainingChannel("train", "s3://bucket/t", instance_group=["gpu"]),
            "instance_group",
            "instance_groups",
        ),
        (
            lambda: DistributedTraining.torch_distributed(instance_groups="gpu"),
            "instance_groups",
            "instance_group",
        ),
        (
            lambda: DistributedTraining.mpi(processes_per_node=8),
            "processes_per_node",
            "processes_per_host",
        ),
    ],
)
def test_python_api_unknown_arguments_are_violations(
    call: Callable[[], Any], path: str, fix: str
) -> None:
    with pytest.raises(SpecValidationError) as raised:
        call()
    violation = one(list(raised.value.violations), "SPEC-UNKNOWN-KEY")
    assert violation.path == path
    assert violation.fix == f"did you mean '{fix}'?"


def test_python_api_missing_arguments_are_violations() -> None:
    with pytest.raises(SpecValidationError) as raised:
        InstanceGroup("gpu")  # type: ignore[call-arg]
    assert [(v.rule, v.path) for v in raised.value.violations] == [
        ("SPEC-REQUIRED", "instance_type")
    ]
    with pytest.raises(SpecValidationError) as raised:
        TrainingSpec()  # type: ignore[call-arg]
    assert [(v.rule, v.path) for v in raised.value.violations] == [("SPEC-REQUIRED", "entry_point")]


def test_python_api_too_many_positional_arguments_are_a_violation() -> None:
    with pytest.raises(SpecValidationError, match="SPEC-TYPE"):
        InstanceGroup("gpu", "ml.p4d.24xlarge", 2, "extra")  # type: ignore[call-arg]


# -- SDK-style tags -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "rule", "path"),
    [
        ([{"Key": ["a"], "Value": "x"}], "SPEC-TYPE", "tags[0].Key"),
        ([{"Key": {"a": 1}, "Value": "x"}], "SPEC-TYPE", "tags[0].Key"),
        ([{"Key": 3, "Value": "x"}], "SPEC-TYPE", "tags[0].Key"),
        ([{"Key": "a", "Value": {"b": 1}}], "SPEC-TYPE", "tags[0].Value"),
        ([{"Key": "a", "Value": 3}], "SPEC-TYPE", "tags[0].Value"),
        ([{"Key": "a"}], "SPEC-REQUIRED", "tags[0].Value"),
        ([{"Value": "a"}], "SPEC-REQUIRED", "tags[0].Key"),
        (
            [{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}],
            "SPEC-DUPLICATE-KEY",
            "tags[1].Key",
        ),
        (["team"], "SPEC-TYPE", "tags[0]"),
    ],
)
def test_sdk_style_tags_with_wrong_types(tags: list[Any], rule: str, path: str) -> None:
    violations = violations_of(spec_dict({"tags": tags}))
    assert one(violations, rule).path == path


def test_sdk_style_tags_still_work() -> None:
    data = spec_dict({"tags": [{"Key": "team", "Value": "ml"}, {"Key": "run", "Value": "42"}]})
    spec = read_spec(data).spec
    assert spec is not None and dict(spec.tags) == {"team": "ml", "run": "42"}
    assert violations_of(data) == []


# -- Nesting ------------------------------------------------------------------------------------


def nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH + 1, 5_000, 200_000])
def test_deep_json_is_refused_quickly_with_its_position(tmp_path: Path, depth: int) -> None:
    text = json.dumps(BASE)[:-1] + ', "hyperparameters": {"a": ' + nested_list(depth) + "}}"
    violations, seconds = timed(lambda: file_violations(tmp_path, "deep.json", text))
    violation = one(violations, "SPEC-DEPTH")
    assert seconds < QUICK
    # The top map is level 1, hyperparameters 2, the list starts at 3.
    start = text.index('"a": [') + len('"a": ')
    column = start + (MAX_NESTING_DEPTH - 2) + 1
    assert f"deep.json, line 1, column {column}:" in violation.problem


def test_nesting_up_to_the_limit_is_fine(tmp_path: Path) -> None:
    # Top map (1), hyperparameters (2), then lists up to the limit.
    inner = nested_list(MAX_NESTING_DEPTH - 2)
    text = json.dumps(BASE)[:-1] + ', "hyperparameters": {"a": ' + inner + "}}"
    assert not any(v.rule == "SPEC-DEPTH" for v in file_violations(tmp_path, "ok.json", text))


def test_brackets_inside_strings_do_not_count(tmp_path: Path) -> None:
    text = json.dumps(spec_dict({"hyperparameters": {"a": "[" * 2_000 + '\\"{'}}))
    assert file_violations(tmp_path, "strings.json", text) == []


def test_unterminated_json_string_is_a_syntax_error_not_a_slow_scan(tmp_path: Path) -> None:
    text = '{"a": "' + '\\"' * 200_000
    violations, seconds = timed(lambda: file_violations(tmp_path, "open.json", text))
    assert one(violations, "SPEC-FILE") and seconds < QUICK


@pytest.mark.parametrize(
    "value",
    [
        nested_list(5_000),  # flow style: libyaml's own limit
        "\n" + "".join("  " * i + f"k{i}:\n" for i in range(2, 200)) + "  " * 200 + "x",
        "\n" + "".join("  " * i + "-\n" for i in range(2, 200)) + "  " * 200 + "- x",
    ],
    ids=["flow", "block maps", "block lists"],
)
def test_deep_yaml_is_refused_quickly_with_its_position(tmp_path: Path, value: str) -> None:
    text = yaml.safe_dump(BASE) + "hyperparameters:\n  a: " + value + "\n"
    violations, seconds = timed(lambda: file_violations(tmp_path, "deep.yaml", text))
    violation = one(violations, "SPEC-DEPTH")
    assert seconds < QUICK
    assert "deep.yaml, line " in violation.problem and ", column " in violation.problem


def test_deep_and_cyclic_python_data_are_violations() -> None:
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    for value in (deep, cyclic):
        data = spec_dict()
        data["hyperparameters"] = {"a": value}  # spec_dict deep-copies: it would recurse
        violations = read_spec(data).violations
        assert one(list(violations), "SPEC-DEPTH").path.startswith("hyperparameters.a[0]")
        with pytest.raises(SpecValidationError) as raised:
            TrainingSpec(entry_point="train.py", hyperparameters={"a": value})
        assert one(list(raised.value.violations), "SPEC-DEPTH").path.startswith("hyperparameters.a")


# -- YAML aliases -------------------------------------------------------------------------------


def alias_bomb(under: str, levels: int = 9, width: int = 9) -> str:
    lines = [f"{under}:", "  x0: &a0 " + json.dumps(["lol"] * width)]
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"  x{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("under", ["hyperparameters", "tags", "environment"])
def test_alias_bombs_are_refused_before_expansion(tmp_path: Path, under: str) -> None:
    text = yaml.safe_dump(BASE) + alias_bomb(under)
    violations, seconds = timed(lambda: file_violations(tmp_path, "bomb.yaml", text))
    violation = one(violations, "SPEC-YAML-SIZE")
    assert seconds < QUICK
    assert f"more than {MAX_YAML_NODES:,} nodes" in violation.problem
    assert "bomb.yaml, line " in violation.problem


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    text = yaml.safe_dump(BASE) + "hyperparameters: &h {a: *h}\n"
    violation = one(file_violations(tmp_path, "loop.yaml", text), "SPEC-YAML-SIZE")
    assert "inside its own anchor" in violation.problem


def test_a_big_plain_yaml_document_is_refused_quickly(tmp_path: Path) -> None:
    text = yaml.safe_dump(BASE) + "hyperparameters:\n  a:\n" + "    - 1\n" * 50_000
    violations, seconds = timed(lambda: file_violations(tmp_path, "big.yaml", text))
    assert one(violations, "SPEC-YAML-SIZE") and seconds < QUICK


def test_ordinary_aliases_and_merge_keys_still_work(tmp_path: Path) -> None:
    text = (
        yaml.safe_dump({k: v for k, v in BASE.items() if k != "channels"})
        + "defaults: &scoped {instance_groups: [data], distribution: FullyReplicated}\n"
        + "channels:\n"
        + "  train: {<<: *scoped, s3_uri: 's3://bucket/train'}\n"
        + "  eval: {<<: *scoped, s3_uri: 's3://bucket/eval', distribution: ShardedByS3Key}\n"
    )
    violations = file_violations(tmp_path, "aliases.yaml", text)
    # The anchor's host key is unknown; the merges are neither duplicates nor errors.
    assert [(v.rule, v.path) for v in violations] == [("SPEC-UNKNOWN-KEY", "defaults")]
    spec = read_spec_file(tmp_path / "aliases.yaml").spec
    assert spec is not None
    assert [c.distribution for c in spec.channels] == ["FullyReplicated", "ShardedByS3Key"]


# -- Duplicate keys -----------------------------------------------------------------------------


def test_duplicate_json_keys_are_violations_with_their_path(tmp_path: Path) -> None:
    text = json.dumps(BASE)[:-1] + ', "job_name": "other"}'
    text = text.replace('"name": "data"', '"name": "data", "name": "cpu"')
    violations = file_violations(tmp_path, "twice.json", text)
    assert sorted(v.path for v in violations if v.rule == "SPEC-DUPLICATE-KEY") == [
        "instance_groups[0].name",
        "job_name",
    ]


def test_duplicate_yaml_keys_are_violations_with_path_line_and_column(tmp_path: Path) -> None:
    text = yaml.safe_dump(BASE) + "hyperparameters:\n  lr: 1\n  lr: 2\n"
    violation = one(file_violations(tmp_path, "twice.yaml", text), "SPEC-DUPLICATE-KEY")
    line = text.splitlines().index("  lr: 2") + 1
    assert violation.path == "hyperparameters.lr"
    assert f"(line {line}, column 3)" in violation.problem


def test_yaml_keys_that_are_equal_once_read_are_duplicates(tmp_path: Path) -> None:
    text = yaml.safe_dump(BASE) + "hyperparameters:\n  1: a\n  0x1: b\n"
    violations = file_violations(tmp_path, "equal.yaml", text)
    assert one(violations, "SPEC-DUPLICATE-KEY").value == 1


# -- Integers -----------------------------------------------------------------------------------

TWO_GROUPS = {
    "instance_groups": [
        {"name": "data", "instance_type": "ml.c5.18xlarge", "instance_count": 2},
        {"name": "gpu", "instance_type": "ml.p4d.24xlarge", "instance_count": 2**31},
    ]
}


@pytest.mark.parametrize(
    ("override", "rule", "path"),
    [
        (TWO_GROUPS, "API-INT-RANGE", "instance_groups[1].instance_count"),
        ({"volume_size": 2**31}, "API-INT-RANGE", "volume_size"),
        ({"use_spot_instances": True, "max_wait": 2**31}, "API-INT-RANGE", "max_wait"),
        ({"max_run": 2**31}, "API-STOPPING", "max_run"),
        ({"volume_size": 10**30}, "SPEC-NUMBER", "volume_size"),
        ({"max_run": -(2**63) - 1}, "SPEC-NUMBER", "max_run"),
        ({"max_retry_attempts": 10**19}, "SPEC-NUMBER", "max_retry_attempts"),
        ({"hyperparameters": {"seed": 2**64}}, "SPEC-NUMBER", "hyperparameters.seed"),
        ({"volume_size": 1e30}, "API-INT-RANGE", "volume_size"),
    ],
)
def test_integers_beyond_the_api_are_violations(
    override: dict[str, Any], rule: str, path: str, tmp_path: Path
) -> None:
    data = spec_dict(override)
    assert one(violations_of(data), rule).path == path
    for name, text in as_json_and_yaml(data):
        assert one(file_violations(tmp_path, name, text), rule).path == path


@pytest.mark.parametrize("where", ["max_run", "hyperparameters"])
def test_five_thousand_digit_literals_are_violations(tmp_path: Path, where: str) -> None:
    digits = "9" * 5_000
    if where == "max_run":
        json_text = json.dumps(BASE)[:-1] + f', "max_run": {digits}}}'
        yaml_text = yaml.safe_dump(BASE) + f"max_run: {digits}\n"
        path = "max_run"
    else:
        json_text = json.dumps(BASE)[:-1] + f', "hyperparameters": {{"seed": {digits}}}}}'
        yaml_text = yaml.safe_dump(BASE) + f"hyperparameters:\n  seed: 0x{'f' * 5_000}\n"
        path = "hyperparameters.seed"
    for name, text in (("big.json", json_text), ("big.yaml", yaml_text)):
        violation = one(file_violations(tmp_path, name, text), "SPEC-NUMBER")
        assert violation.path == path
        assert "digits>" in violation.message


def test_python_api_huge_integers_are_violations_that_print() -> None:
    with pytest.raises(SpecValidationError) as raised:
        InstanceGroup("gpu", "ml.p4d.24xlarge", 10**5_000)
    violation = one(list(raised.value.violations), "SPEC-NUMBER")
    assert "an integer of about 5001 digits" in str(raised.value)
    assert violation.path == "instance_count"


# -- Syntax errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "line", "column"),
    [
        ("bad.json", '{\n  "entry_point": "train.py",\n  "framework" "pytorch"\n}', 3, 15),
        ("bad.json", '{"entry_point": "train.py",}', 1, 28),
        ("bad.yaml", "entry_point: train.py\nframework: [pytorch\n", 3, 1),
        ("bad.yaml", "entry_point: train.py\n  framework: pytorch\n", 2, 12),
        ("bad.yaml", "entry_point: !!python/object:os.system x\n", 1, 14),
        ("bad.yaml", "a: 1\n---\nb: 2\n", 2, 1),
    ],
)
def test_syntax_errors_name_file_line_and_column(
    tmp_path: Path, name: str, text: str, line: int, column: int
) -> None:
    violation = one(file_violations(tmp_path, name, text), "SPEC-FILE")
    assert f"{tmp_path / name}, line {line}, column {column}:" in violation.problem
    assert violation.fix == f"fix {tmp_path / name} at line {line}, column {column}"


# -- Enum-like arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "path", "meant"),
    [
        (
            lambda: DistributedTraining.torch_distributed(smddp_collective="allreduce"),
            "smddp_collective",
            "AllReduce",
        ),
        (
            lambda: DistributedTraining.smdistributed_data_parallel(smddp_collective="all_gather"),
            "smddp_collective",
            "AllGather",
        ),
        (
            lambda: DistributedTraining(smddp_collectives=["ALLREDUCE"]),
            "smddp_collectives[0]",
            "AllReduce",
        ),
        (lambda: TrainingSpec(entry_point="t.py", framework="PyTorch"), "framework", "pytorch"),
        (lambda: LauncherConfig(kind="MPI"), "kind", "mpi"),
        (
            lambda: DistributedTraining.smdistributed_model_parallel(
                {"partitions": 2}, launcher="Torch-Distributed"
            ),
            "kind",
            "torch_distributed",
        ),
    ],
)
def test_enum_like_strings_in_the_wrong_case_are_violations(
    call: Callable[[], Any], path: str, meant: str
) -> None:
    with pytest.raises(SpecValidationError) as raised:
        call()
    violation = one(list(raised.value.violations), "SPEC-TYPE")
    assert violation.path == path
    assert violation.fix == f"did you mean '{meant}'?"


def test_enum_values_as_plain_strings_are_accepted() -> None:
    distribution = DistributedTraining.smdistributed_model_parallel(
        {"partitions": 2}, launcher="torch_distributed"
    )
    assert distribution.launcher_kinds == (Launcher.TORCH_DISTRIBUTED,)
    assert DistributedTraining(smddp_collectives=["AllGather"]).smddp_collectives == (
        SmddpCollective.ALL_GATHER,
    )


def test_spec_file_enum_values_in_the_wrong_case(tmp_path: Path) -> None:
    data = spec_dict({"smddp_collective": "allreduce", "framework": "PyTorch"})
    for name, text in as_json_and_yaml(data):
        violations = file_violations(tmp_path, name, text)
        fixes = {v.path: v.fix for v in violations}
        assert fixes == {
            "smddp_collective": "did you mean 'AllReduce'?",
            "framework": "did you mean 'pytorch'?",
        }


# -- Files that are not spec files --------------------------------------------------------------


def test_fifos_sockets_directories_and_huge_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_SPEC_FILE_BYTES + 1))
    sock = tmp_path / "socket.yaml"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    try:
        for path, problem in (
            (fifo, "not a regular file"),
            (sock, "not a regular file"),
            (tmp_path, "not a regular file"),
            (big, "too large"),
        ):

            def read(target: Path = path) -> list[Violation]:
                try:
                    read_spec_file(target)
                except SpecValidationError as error:
                    return list(error.violations)
                return []

            violation = one(finishes(read), "SPEC-FILE")
            assert problem in violation.problem
    finally:
        server.close()


# -- The CLI never prints a traceback for bad input ---------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", nested_list(100_000)),
        ("bomb.yaml", yaml.safe_dump(BASE) + alias_bomb("tags")),
        ("twice.json", '{"entry_point": "a.py", "entry_point": "b.py", "framework": "pytorch"}'),
        ("surrogate.json", json.dumps(spec_dict({"\ud800\n": 1}))),
        ("huge.json", json.dumps(BASE)[:-1] + f', "volume_size": {"9" * 5_000}}}'),
        ("syntax.yaml", "a: [\n"),
        ("tags.json", json.dumps(spec_dict({"tags": [{"Key": ["x"], "Value": 1}]}))),
    ],
)
def test_cli_prints_violations_for_hostile_files(tmp_path: Path, name: str, text: str) -> None:
    from hetero_constructs.cli import main  # the CLI's own dependencies stay out of the module

    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    for args in ([], ["--json"]):
        out = io.StringIO()
        code = main(["plan", str(path), *args], out=out)
        assert code == 1
        written = out.getvalue()
        written.encode("utf-8")  # printable: nothing a terminal cannot take
        assert "Traceback" not in written
        if args:
            assert json.loads(written)["violations"]


# -- Rendering values in messages ---------------------------------------------------------------


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_render_value_is_bounded_for_any_value() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    cases = [10**5_000, cyclic, deep, list(range(1_000_000)), Unprintable(), {1: "a", "b": 2}]
    for value in cases:
        text, seconds = timed(lambda value=value: render_value(value))
        assert len(text) <= 200 and seconds < 0.1, (text, seconds)
    assert render_value(10**5_000) == "<an integer of about 5001 digits>"
    assert render_value(Unprintable()).startswith('"<Unprintable')


def test_render_value_matches_json_for_ordinary_values() -> None:
    for value in [{"b": [1, 2.5, None, True], "a": "x"}, "y" * 500, ["é" * 300], {"k": {"j": []}}]:
        expected = json.dumps(value, sort_keys=True)
        if len(expected) > 200:
            expected = expected[:197] + "..."
        assert render_value(value) == expected


def test_violation_texts_stay_printable_and_short() -> None:
    violation = Violation("R", "a\ud800\nb" + "x" * 1_000, "p\tq", 1, "ok", "fix")
    assert violation.path.startswith("a\\ud800\\nb") and len(violation.path) == 300
    assert violation.problem == "p\\tq"
    str(violation).encode("utf-8")
