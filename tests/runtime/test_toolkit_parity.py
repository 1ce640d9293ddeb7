"""``TrainingEnvironment`` against the real toolkit's ``sagemaker_training.environment``.

Every case writes real ``resourceconfig.json`` / ``hyperparameters.json`` files into a
temporary base directory. ``TrainingEnvironment()`` finds them through ``SAGEMAKER_BASE_DIR``;
the toolkit's ``Environment()`` reads the same files (its paths are module constants fixed at
import, so they are pointed at the files for the duration of the call). For one host per case
both are also built from already-parsed dicts. Every attribute is compared, type included.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hetero_constructs.runtime import (
    LAUNCHER_FLAGS,
    HostRole,
    TrainingEnvironment,
    decode_hyperparameters,
)

WriteConfig = Callable[..., Path]

# Attributes with the toolkit's name and meaning, compared value and type.
TOOLKIT_ATTRIBUTES = (
    "is_hetero",
    "current_host",
    "hosts",
    "current_instance_type",
    "current_instance_group",
    "current_instance_group_hosts",
    "instance_groups",
    "instance_groups_dict",
    "distribution_instance_groups",
    "distribution_hosts",
    "master_hostname",
    "is_master",
    "network_interface_name",
    "resource_config",
)
# Compared through their JSON text: decoded values may hold NaN, which is != itself.
HYPERPARAMETER_ATTRIBUTES = ("hyperparameters", "additional_framework_parameters")

INSTANCE_TYPES = (
    "ml.c5.18xlarge",
    "ml.p3dn.24xlarge",
    "ml.p4d.24xlarge",
    "ml.g5.2xlarge",
    "ml.m5.xlarge",
    "ml.trn1.32xlarge",
)
# The six launchers of the brief, the XLA one the toolkit also checks, and no launcher.
FLAGS: tuple[str | None, ...] = (*LAUNCHER_FLAGS, None)
assert set(LAUNCHER_FLAGS) >= {
    "sagemaker_mpi_enabled",
    "sagemaker_distributed_dataparallel_enabled",
    "sagemaker_torch_distributed_enabled",
    "sagemaker_parameter_server_enabled",
    "sagemaker_multi_worker_mirrored_strategy_enabled",
    "sagemaker_pytorch_ddp_enabled",
}

_COUNTS = {"hosts compared (files)": 0, "hosts compared (dicts)": 0, "clusters": 0}


# -- the toolkit -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toolkit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """``sagemaker_training.environment``, imported without side effects on this process.

    On import the toolkit fixes its paths from ``SAGEMAKER_BASE_DIR``; when neither that nor
    ``/opt/ml`` exists it sets ``SAGEMAKER_BASE_DIR`` itself and creates a job tree under
    ``~/sagemaker_local``. Point it at a scratch directory while importing, then restore.
    """
    scratch = tmp_path_factory.mktemp("toolkit-base")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SAGEMAKER_BASE_DIR", str(scratch))
        module = pytest.importorskip(
            "sagemaker_training.environment",
            reason="sagemaker-training (the SageMaker training toolkit) is not installed; "
            "install the dev extras to compare TrainingEnvironment with it",
        )
    yield module
    print(f"\ntoolkit parity: {_COUNTS}")


def toolkit_environment(toolkit: ModuleType, config_dir: Path, **kwargs: Any) -> Any:
    """Run the toolkit's ``Environment(**kwargs)`` with its file paths set to ``config_dir``.

    The constructor also writes ``CURRENT_HOST``, ``SAGEMAKER_JOB_NAME`` and
    ``SAGEMAKER_REGION`` into ``os.environ``; they are restored afterwards.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolkit, "resource_config_file_dir", str(config_dir / "resourceconfig.json"))
        patch.setattr(toolkit, "hyperparameters_file_dir", str(config_dir / "hyperparameters.json"))
        patch.setattr(
            toolkit, "input_data_config_file_dir", str(config_dir / "inputdataconfig.json")
        )
        for name in ("CURRENT_HOST", "SAGEMAKER_JOB_NAME", "SAGEMAKER_REGION"):
            patch.setenv(name, os.environ.get(name, ""))
        return toolkit.Environment(**kwargs)


def assert_same(ours: TrainingEnvironment, theirs: Any) -> None:
    """Compare every shared attribute, and our extras with what the toolkit implies."""
    for name in TOOLKIT_ATTRIBUTES:
        mine, toolkits = getattr(ours, name), getattr(theirs, name)
        assert (type(mine), mine) == (type(toolkits), toolkits), name
    for name in HYPERPARAMETER_ATTRIBUTES:
        assert json.dumps(getattr(ours, name)) == json.dumps(getattr(theirs, name)), name
    # The PyTorch/TensorFlow toolkits launch the distributed runner exactly on these hosts.
    assert ours.runs_distributed_training is theirs._distribution_enabled
    hosts = theirs.distribution_hosts
    expected_rank = hosts.index(theirs.current_host) if theirs.current_host in hosts else None
    assert ours.node_rank == expected_rank  # the toolkit's torchrun --node_rank
    if theirs._distribution_enabled:
        assert ours.role is HostRole.DISTRIBUTED
    elif theirs.distribution_instance_groups:
        assert ours.role is HostRole.DATA
    else:
        assert ours.role is HostRole.STANDALONE


def compare_cluster(
    toolkit: ModuleType,
    write_config: WriteConfig,
    resource_configs: list[dict[str, Any]],
    raw_hyperparameters: Mapping[str, Any],
    dict_host_index: int = 0,
) -> None:
    """Compare both sides on every host's files, and on dicts for one host."""
    _COUNTS["clusters"] += 1
    with tempfile.TemporaryDirectory() as tmp:
        for index, resource_config in enumerate(resource_configs):
            base = Path(tmp) / resource_config["current_host"]
            config_dir = write_config(base, resource_config, raw_hyperparameters)
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("SAGEMAKER_BASE_DIR", str(base))
                ours = TrainingEnvironment()
            assert_same(ours, toolkit_environment(toolkit, config_dir))
            _COUNTS["hosts compared (files)"] += 1
            if index == dict_host_index % len(resource_configs):
                decoded = decode_hyperparameters(raw_hyperparameters)
                ours = TrainingEnvironment(resource_config, decoded)
                theirs = toolkit_environment(
                    toolkit,
                    config_dir,
                    resource_config=resource_config,
                    hyperparameters=decoded,
                    input_data_config={"train": {"TrainingInputMode": "File"}},
                )
                assert_same(ours, theirs)
                _COUNTS["hosts compared (dicts)"] += 1


# -- generated clusters ------------------------------------------------------------------------

GROUP_NAMES = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,14}", fullmatch=True)
USER_KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True).filter(
    lambda key: not key.startswith("sagemaker")
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
# How hyperparameters.json may carry a value: JSON-encoded (what the SDKs write), a raw string
# that may or may not be valid JSON, or (hand-written files) a bare JSON value.
RAW_VALUES = (
    JSON_VALUES.map(json.dumps)
    | st.text(max_size=10)
    | st.integers()
    | st.lists(st.integers(), max_size=2)
)
# Raw flag values: the SDK writes "true"; the others check the toolkit's truthiness rule.
FLAG_VALUES = st.sampled_from(["true", "true", "true", "false", "1", "0", '""', '"yes"', "yes"])


@st.composite
def instance_groups(draw: st.DrawFn, min_groups: int, max_groups: int) -> list[dict[str, Any]]:
    """Groups as SageMaker lists them; hosts ``algo-1..N`` dealt out in a random order."""
    names = draw(st.lists(GROUP_NAMES, min_size=min_groups, max_size=max_groups, unique=True))
    sizes = [draw(st.integers(1, 3)) for _ in names]
    hosts = draw(st.permutations([f"algo-{i}" for i in range(1, sum(sizes) + 1)]))
    groups, start = [], 0
    for name, size in zip(names, sizes, strict=True):
        groups.append(
            {
                "instance_group_name": name,
                "instance_type": draw(st.sampled_from(INSTANCE_TYPES)),
                "hosts": list(hosts[start : start + size]),
            }
        )
        start += size
    return groups


def resource_configs_for(
    groups: list[dict[str, Any]], *, omit: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """One resourceconfig.json per host, as SageMaker writes them (minus ``omit`` keys)."""
    all_hosts = sorted(host for group in groups for host in group["hosts"])
    configs = []
    for group in groups:
        for host in group["hosts"]:
            config = {
                "current_host": host,
                "current_instance_type": group["instance_type"],
                "current_group_name": group["instance_group_name"],
                "hosts": all_hosts,
                "instance_groups": groups,
                "network_interface_name": "eth0",
            }
            configs.append({key: value for key, value in config.items() if key not in omit})
    return configs


@st.composite
def raw_hyperparameters(
    draw: st.DrawFn, flag: str | None, distribution: str, group_names: list[str]
) -> dict[str, Any]:
    """hyperparameters.json content: user keys, toolkit keys, a launcher flag and, when
    ``distribution == "explicit"``, ``sagemaker_distribution_instance_groups``."""
    raw: dict[str, Any] = dict(draw(st.dictionaries(USER_KEYS, RAW_VALUES, max_size=4)))
    if draw(st.booleans()):
        raw.update(
            {
                "sagemaker_program": '"train.py"',
                "sagemaker_submit_directory": '"s3://bucket/job/source/sourcedir.tar.gz"',
                "sagemaker_container_log_level": "20",
                "sagemaker_job_name": '"job-1"',
                "sagemaker_region": '"us-west-2"',
                "_tuning_objective_metric": '"loss"',
            }
        )
    if draw(st.booleans()):
        raw["sagemaker_instance_type"] = json.dumps(draw(st.sampled_from(INSTANCE_TYPES)))
    if flag is not None:
        raw[flag] = draw(FLAG_VALUES)
    if distribution == "explicit":
        choice = st.sampled_from([*group_names, "not-a-group"])
        groups = draw(
            st.lists(choice, min_size=1, max_size=1)  # what the SDK writes
            | st.lists(choice, max_size=3, unique=True)
        )
        raw["sagemaker_distribution_instance_groups"] = json.dumps(groups)
    keys = draw(st.permutations(sorted(raw)))
    return {key: raw[key] for key in keys}


PARITY_SETTINGS = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)


@pytest.mark.parametrize("distribution", ["explicit", "absent"])
@pytest.mark.parametrize("flag", FLAGS, ids=lambda flag: flag or "no-launcher")
@PARITY_SETTINGS
@given(data=st.data())
def test_heterogeneous_matches_toolkit(
    toolkit: ModuleType,
    write_config_files: WriteConfig,
    flag: str | None,
    distribution: str,
    data: st.DataObject,
) -> None:
    groups = data.draw(instance_groups(2, 5), label="groups")
    # Rarely, keys SageMaker always writes are missing: the toolkit's defaults apply.
    omit = data.draw(
        st.sampled_from([frozenset()] * 6 + [frozenset({"current_group_name"})])
        | st.just(frozenset({"current_instance_type", "network_interface_name"})),
        label="omit",
    )
    names = [group["instance_group_name"] for group in groups]
    raw = data.draw(raw_hyperparameters(flag, distribution, names), label="hyperparameters")
    configs = resource_configs_for(groups, omit=omit)
    compare_cluster(toolkit, write_config_files, configs, raw, data.draw(st.integers(0, 20)))


@st.composite
def homogeneous_configs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A one-group job as SageMaker writes it, or older/local-mode shapes."""
    style = draw(st.sampled_from(["sagemaker", "named-group", "no-groups", "bootstrap"]))
    if style in ("sagemaker", "named-group"):
        name = "homogeneousCluster" if style == "sagemaker" else draw(GROUP_NAMES)
        groups = draw(instance_groups(1, 1))
        groups[0]["instance_group_name"] = name
        return resource_configs_for(groups)
    hosts = [f"algo-{i}" for i in range(1, draw(st.integers(1, 4)) + 1)]
    configs: list[dict[str, Any]] = []
    for host in hosts:
        config: dict[str, Any] = {"current_host": host, "hosts": hosts}
        if style == "bootstrap":
            # The shape the toolkit's own local bootstrap writes: ``current_instance_group``.
            config["current_instance_group"] = "homogeneousCluster"
            group = {"instance_group_name": "homogeneousCluster", "instance_type": "local"}
            config["instance_groups"] = [{**group, "hosts": hosts}]
        configs.append(config)
    return configs


@PARITY_SETTINGS
@given(data=st.data())
def test_homogeneous_matches_toolkit(
    toolkit: ModuleType, write_config_files: WriteConfig, data: st.DataObject
) -> None:
    configs = data.draw(homogeneous_configs(), label="configs")
    flag = data.draw(st.sampled_from(FLAGS), label="flag")
    names = [group["instance_group_name"] for group in configs[0].get("instance_groups", [])]
    distribution = data.draw(st.sampled_from(["explicit", "absent"]), label="distribution")
    raw = data.draw(raw_hyperparameters(flag, distribution, names), label="hyperparameters")
    compare_cluster(toolkit, write_config_files, configs, raw, data.draw(st.integers(0, 20)))


# -- explicit cases ----------------------------------------------------------------------------

# The AWS developer guide's heterogeneous example (instance_groups_dict output).
DOC_GROUPS = [
    {
        "instance_group_name": "instance_group_1",
        "instance_type": "ml.c5.18xlarge",
        "hosts": ["algo-2"],
    },
    {
        "instance_group_name": "instance_group_2",
        "instance_type": "ml.p3dn.24xlarge",
        "hosts": ["algo-3", "algo-1"],
    },
]


@pytest.mark.parametrize(
    "distribution_groups",
    [None, ["instance_group_2"], ["instance_group_1"]],
    ids=["no-distribution-groups", "gpu-group", "cpu-group"],
)
@pytest.mark.parametrize("flag", FLAGS, ids=lambda flag: flag or "no-launcher")
def test_doc_example_matches_toolkit(
    toolkit: ModuleType,
    write_config_files: WriteConfig,
    flag: str | None,
    distribution_groups: list[str] | None,
) -> None:
    raw: dict[str, Any] = {"epochs": "3", "optimizer": '"adam"', "note": "raw text"}
    if flag:
        raw[flag] = "true"
    if distribution_groups is not None:
        raw["sagemaker_distribution_instance_groups"] = json.dumps(distribution_groups)
    compare_cluster(toolkit, write_config_files, resource_configs_for(DOC_GROUPS), raw)


def test_doc_example_values(write_config_files: WriteConfig, tmp_path: Path) -> None:
    """The facts a script in the doc's cluster sees, spelled out."""
    raw = {
        "sagemaker_torch_distributed_enabled": "true",
        "sagemaker_distribution_instance_groups": '["instance_group_2"]',
        "epochs": "3",
    }
    envs = {}
    for config in resource_configs_for(DOC_GROUPS):
        host = config["current_host"]
        write_config_files(tmp_path / host, config, raw)
        envs[host] = TrainingEnvironment(base_dir=tmp_path / host)
    cpu, gpu_master, gpu_worker = envs["algo-2"], envs["algo-3"], envs["algo-1"]
    assert cpu.is_hetero and cpu.instance_groups == ["instance_group_1", "instance_group_2"]
    assert cpu.instance_groups_dict == {group["instance_group_name"]: group for group in DOC_GROUPS}
    assert cpu.current_instance_type == "ml.c5.18xlarge"
    assert cpu.hosts == ["algo-1", "algo-2", "algo-3"]
    for env in envs.values():
        assert env.distribution_instance_groups == ["instance_group_2"]
        assert env.distribution_hosts == ["algo-3", "algo-1"]  # group order, not sorted
        assert env.master_hostname == "algo-3"
        assert env.data_hosts == ["algo-2"]
        assert env.hyperparameters == {"epochs": 3}
    assert (cpu.role, cpu.node_rank, cpu.is_master) == (HostRole.DATA, None, False)
    assert (gpu_master.role, gpu_master.node_rank, gpu_master.is_master) == (
        HostRole.DISTRIBUTED,
        0,
        True,
    )
    assert (gpu_worker.role, gpu_worker.node_rank, gpu_worker.is_master) == (
        HostRole.DISTRIBUTED,
        1,
        False,
    )
    assert gpu_worker.current_instance_group_hosts == ["algo-3", "algo-1"]


def test_without_distribution_groups_every_group_is_its_own_world(
    toolkit: ModuleType, write_config_files: WriteConfig
) -> None:
    """The SDK omits sagemaker_distribution_instance_groups for torch_distributed: each group
    then launches torchrun over its own hosts, the CPU group included (toolkit behaviour)."""
    raw = {"sagemaker_torch_distributed_enabled": "true"}
    for config in resource_configs_for(DOC_GROUPS):
        env = TrainingEnvironment(config, decode_hyperparameters(raw))
        assert env.role is HostRole.DISTRIBUTED
        assert env.distribution_instance_groups == [config["current_group_name"]]
        assert env.distribution_hosts == env.current_instance_group_hosts
    compare_cluster(toolkit, write_config_files, resource_configs_for(DOC_GROUPS), raw)


def test_bootstrap_key_is_ignored_like_the_toolkit(
    toolkit: ModuleType, write_config_files: WriteConfig
) -> None:
    """``current_instance_group`` (the key the toolkit's local bootstrap writes) is not read by
    its constructor: the current group falls back to ``homogeneousCluster``."""
    config = {
        "current_host": "algo-1",
        "hosts": ["algo-1"],
        "current_instance_group": "train",
        "instance_groups": [
            {"instance_group_name": "train", "instance_type": "local", "hosts": ["algo-1"]}
        ],
    }
    raw = {"sagemaker_mpi_enabled": "true"}
    env = TrainingEnvironment(config, decode_hyperparameters(raw))
    assert env.current_instance_group == "homogeneousCluster"
    assert env.current_instance_group_hosts == []
    assert env.distribution_instance_groups == ["homogeneousCluster"]
    assert env.distribution_hosts == []
    assert env.master_hostname == "algo-1"
    compare_cluster(toolkit, write_config_files, [config], raw)


def test_hyperparameter_decoding_matches_toolkit(
    toolkit: ModuleType, write_config_files: WriteConfig, tmp_path: Path
) -> None:
    raw = {
        "int": "3",
        "float": "0.5",
        "bool": "true",
        "null": "null",
        "quoted": '"adam"',
        "bare": "adam",
        "list": '["a", 1]',
        "dict": '{"k": [1, 2]}',
        "not-a-string": 7,
        "nan": "NaN",
        "spaces": " 4 ",
    }
    config_dir = write_config_files(tmp_path, {"current_host": "a", "hosts": ["a"]}, raw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolkit, "hyperparameters_file_dir", str(config_dir / "hyperparameters.json"))
        expected = toolkit.read_hyperparameters()
    assert json.dumps(decode_hyperparameters(raw)) == json.dumps(expected)
    assert decode_hyperparameters(raw)["bare"] == "adam"
    assert decode_hyperparameters(raw)["quoted"] == "adam"
