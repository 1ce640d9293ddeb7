"""``TrainingEnvironment``: the cluster facts a heterogeneous-cluster training script needs.

The attribute names and their values follow ``sagemaker_training.environment.Environment``
(the toolkit the SageMaker framework containers run), so a script sees exactly what the
launcher saw when it decided where to start ``torchrun``, ``mpirun`` and the like. On top of
that it answers the question every host of a heterogeneous job must ask first: *do I run the
distributed training or do I serve data?* (:attr:`TrainingEnvironment.role`).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

from .config import (
    DEFAULT_INSTANCE_TYPE,
    DEFAULT_NETWORK_INTERFACE,
    DISTRIBUTION_GROUPS_KEY,
    HOMOGENEOUS_GROUP,
    HYPERPARAMETERS_FILE,
    LAUNCHER_FLAGS,
    RESOURCE_CONFIG_FILE,
    check_hyperparameters,
    check_resource_config,
    config_file_path,
    decode_hyperparameters,
    read_json_object,
    split_hyperparameters,
)

if TYPE_CHECKING:
    from typing import TypeAlias

    PathLike: TypeAlias = str | os.PathLike[str]


# ``enum.StrEnum`` would need Python 3.11; training containers may run older Pythons.
class HostRole(str, Enum):  # noqa: UP042
    """What the current host is for (the value of :attr:`TrainingEnvironment.role`).

    Named apart from IAM roles (``aws_cdk.aws_iam.Role``): this is the host's part in the job.
    """

    DISTRIBUTED = "distributed"
    """This host's group is a distribution group. The framework container starts the
    distributed launcher (``torchrun``, ``mpirun``, ...) here and the script runs as one or more
    ranks of the distributed job."""

    DATA = "data"
    """Distribution groups are configured, but this host's group is not one of them. The
    container runs the script as a plain process; in a heterogeneous job this is the host that
    preprocesses and serves data to the distribution group."""

    STANDALONE = "standalone"
    """No distribution group at all (no launcher enabled and no
    ``sagemaker_distribution_instance_groups``). Every host runs the script as a plain process."""

    def __str__(self) -> str:
        return self.value


# The former name, kept for training scripts written against it.
Role = HostRole


class TrainingEnvironment:
    """A read-only snapshot of the SageMaker training cluster, as the toolkit sees it.

    With no arguments it reads ``<base>/input/config/resourceconfig.json`` and
    ``<base>/input/config/hyperparameters.json``, where ``<base>`` is ``$SAGEMAKER_BASE_DIR``
    when set, else ``/opt/ml``. Each input can instead be given as a file path or as an
    already-parsed dict::

        env = TrainingEnvironment()                            # inside a training container
        env = TrainingEnvironment(base_dir="/tmp/host-1")      # files under another base
        env = TrainingEnvironment(resource_config_path="rc.json", hyperparameters_path="hp.json")
        env = TrainingEnvironment(resource_config={...}, hyperparameters={"epochs": 3})

    Hyperparameters read from a file are JSON-decoded value by value, keeping a string that is
    not valid JSON as is (the toolkit's rule). A ``hyperparameters`` dict is taken as already
    decoded, as the toolkit's ``Environment(hyperparameters=...)`` does; run the raw content
    of ``hyperparameters.json`` through :func:`decode_hyperparameters` first. Unlike the
    toolkit, an empty dict means "no hyperparameters", not "read the file".

    Args:
        resource_config: The parsed content of ``resourceconfig.json``.
        hyperparameters: Decoded hyperparameters (all of them, ``sagemaker_`` keys included).
        base_dir: Base directory for the files not given otherwise (overrides
            ``$SAGEMAKER_BASE_DIR``).
        resource_config_path: Read the resource config from this file.
        hyperparameters_path: Read (and decode) the hyperparameters from this file.

    Raises:
        TrainingEnvironmentError: A file is missing, unreadable or not valid JSON, or an input
            has the wrong shape. The message names the file (or argument), the problem and the
            fix.
        TypeError: Both a dict and a path were given for the same input.
    """

    def __init__(
        self,
        resource_config: Mapping[str, Any] | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        *,
        base_dir: PathLike | None = None,
        resource_config_path: PathLike | None = None,
        hyperparameters_path: PathLike | None = None,
    ) -> None:
        if resource_config is not None and resource_config_path is not None:
            raise TypeError("pass either resource_config or resource_config_path, not both")
        if hyperparameters is not None and hyperparameters_path is not None:
            raise TypeError("pass either hyperparameters or hyperparameters_path, not both")

        if resource_config is not None:
            config = check_resource_config(resource_config, "the resource_config argument")
        else:
            path = _path_or_default(resource_config_path, RESOURCE_CONFIG_FILE, base_dir)
            config = check_resource_config(read_json_object(path, RESOURCE_CONFIG_FILE), path)

        if hyperparameters is not None:
            all_hps = check_hyperparameters(hyperparameters, "the hyperparameters argument")
        else:
            path = _path_or_default(hyperparameters_path, HYPERPARAMETERS_FILE, base_dir)
            raw = read_json_object(path, HYPERPARAMETERS_FILE)
            all_hps = check_hyperparameters(decode_hyperparameters(raw), path)

        self._resource_config = config
        self._hyperparameters, self._framework_parameters = split_hyperparameters(all_hps)

        self._current_host: str = config["current_host"]
        self._hosts: list[str] = list(config["hosts"])
        self._current_instance_type: str = config.get(
            "current_instance_type", DEFAULT_INSTANCE_TYPE
        )
        # The toolkit's constructor reads ``current_group_name``. Its local-mode bootstrap and
        # ``get_current_instance_group()`` use ``current_instance_group`` instead; the
        # constructor wins because every property derives from it.
        self._current_instance_group: str = config.get("current_group_name", HOMOGENEOUS_GROUP)
        self._network_interface_name: str = config.get(
            "network_interface_name", DEFAULT_NETWORK_INTERFACE
        )

        groups: list[dict[str, Any]] = config.get("instance_groups", [])
        self._instance_groups = [group["instance_group_name"] for group in groups]
        self._instance_groups_dict = {group["instance_group_name"]: group for group in groups}
        self._current_instance_group_hosts: list[str] = list(
            self._instance_groups_dict.get(self._current_instance_group, {}).get("hosts", [])
        )

        if DISTRIBUTION_GROUPS_KEY in self._framework_parameters:
            self._distribution_instance_groups = list(
                self._framework_parameters[DISTRIBUTION_GROUPS_KEY]
            )
        elif any(self._framework_parameters.get(flag, False) for flag in LAUNCHER_FLAGS):
            # No explicit distribution groups: the toolkit makes the current group the
            # distribution group, on every host of every group.
            self._distribution_instance_groups = [self._current_instance_group]
        else:
            self._distribution_instance_groups = []

        if groups:
            self._distribution_hosts = [
                host
                for group in groups
                if group["instance_group_name"] in self._distribution_instance_groups
                for host in group["hosts"]
            ]
            self._data_instance_groups = [
                name
                for name in self._instance_groups
                if name not in self._distribution_instance_groups
            ]
        else:
            # No instance groups (older local mode): the toolkit distributes over every host.
            self._distribution_hosts = list(self._hosts)
            self._data_instance_groups = []

        self._master_hostname = (
            self._distribution_hosts[0] if self._distribution_hosts else self._hosts[0]
        )

    # -- the toolkit's attributes ----------------------------------------------------------

    @property
    def current_host(self) -> str:
        """This host's name on the container network, e.g. ``"algo-1"``."""
        return self._current_host

    @property
    def hosts(self) -> list[str]:
        """All hosts of the job, across every instance group, as listed in the config."""
        return list(self._hosts)

    @property
    def current_instance_type(self) -> str:
        """This host's instance type (``current_instance_type``; ``"local"`` when absent)."""
        return self._current_instance_type

    @property
    def current_instance_group(self) -> str:
        """This host's instance group (``current_group_name``; ``"homogeneousCluster"`` when
        absent)."""
        return self._current_instance_group

    @property
    def current_instance_group_hosts(self) -> list[str]:
        """Hosts of this host's instance group; ``[]`` when no group has that name."""
        return list(self._current_instance_group_hosts)

    @property
    def instance_groups(self) -> list[str]:
        """Names of all instance groups, in config order (``[]`` without ``instance_groups``)."""
        return list(self._instance_groups)

    @property
    def instance_groups_dict(self) -> dict[str, dict[str, Any]]:
        """Every instance group's config object (``instance_group_name``, ``instance_type``,
        ``hosts``), keyed by group name."""
        return copy.deepcopy(self._instance_groups_dict)

    @property
    def is_hetero(self) -> bool:
        """Whether the job has more than one instance group."""
        return len(self._instance_groups) > 1

    @property
    def distribution_instance_groups(self) -> list[str]:
        """Instance groups the distributed launcher runs on.

        The ``sagemaker_distribution_instance_groups`` hyperparameter when present. Otherwise
        ``[current_instance_group]`` when any launcher flag (``sagemaker_mpi_enabled``,
        ``sagemaker_torch_distributed_enabled``, ... see ``LAUNCHER_FLAGS``) is truthy, else
        ``[]``. Note the fallback: without the explicit hyperparameter, every group of a
        heterogeneous job considers *itself* the distribution group and forms its own world.
        """
        return list(self._distribution_instance_groups)

    @property
    def distribution_hosts(self) -> list[str]:
        """Hosts of the distribution groups, group by group in config order.

        Without ``instance_groups`` in the config, all hosts (the toolkit's local-mode rule,
        which applies even when no distribution is configured).
        """
        return list(self._distribution_hosts)

    @property
    def master_hostname(self) -> str:
        """The first distribution host, or the first host when there is none."""
        return self._master_hostname

    @property
    def is_master(self) -> bool:
        """Whether this host is :attr:`master_hostname`."""
        return self._current_host == self._master_hostname

    @property
    def network_interface_name(self) -> str:
        """The container's network interface (``"eth0"`` when absent)."""
        return self._network_interface_name

    @property
    def hyperparameters(self) -> dict[str, Any]:
        """User hyperparameters, decoded: every key except ``sagemaker_*`` and the toolkit's
        own keys."""
        return copy.deepcopy(self._hyperparameters)

    @property
    def additional_framework_parameters(self) -> dict[str, Any]:
        """The ``sagemaker_*`` hyperparameters the toolkit passes on to the framework
        (launcher flags, ``sagemaker_distribution_instance_groups``, ...)."""
        return copy.deepcopy(self._framework_parameters)

    @property
    def resource_config(self) -> dict[str, Any]:
        """The resource config as read (a copy)."""
        return copy.deepcopy(self._resource_config)

    # -- the answers a heterogeneous script needs ------------------------------------------

    @property
    def runs_distributed_training(self) -> bool:
        """Whether this host's group is a distribution group, i.e. whether the framework
        container starts the distributed launcher on this host (the PyTorch and TensorFlow
        toolkits' test)."""
        return self._current_instance_group in self._distribution_instance_groups

    @property
    def role(self) -> HostRole:
        """:attr:`HostRole.DISTRIBUTED`, :attr:`HostRole.DATA` or :attr:`HostRole.STANDALONE`."""
        if self.runs_distributed_training:
            return HostRole.DISTRIBUTED
        if self._distribution_instance_groups:
            return HostRole.DATA
        return HostRole.STANDALONE

    @property
    def node_rank(self) -> int | None:
        """This host's index in :attr:`distribution_hosts` (the ``--node_rank`` the toolkit
        gives ``torchrun``), or ``None`` when it is not a distribution host."""
        if self._current_host in self._distribution_hosts:
            return self._distribution_hosts.index(self._current_host)
        return None

    @property
    def data_instance_groups(self) -> list[str]:
        """Instance groups that are not distribution groups, in config order."""
        return list(self._data_instance_groups)

    @property
    def data_hosts(self) -> list[str]:
        """Hosts of :attr:`data_instance_groups`, group by group in config order."""
        return [
            host
            for name in self._data_instance_groups
            for host in self._instance_groups_dict[name]["hosts"]
        ]

    def to_dict(self) -> dict[str, Any]:
        """All the facts above as a JSON-serialisable dict (handy for logging)."""
        return {
            "current_host": self.current_host,
            "hosts": self.hosts,
            "current_instance_type": self.current_instance_type,
            "current_instance_group": self.current_instance_group,
            "current_instance_group_hosts": self.current_instance_group_hosts,
            "instance_groups": self.instance_groups,
            "instance_groups_dict": self.instance_groups_dict,
            "is_hetero": self.is_hetero,
            "distribution_instance_groups": self.distribution_instance_groups,
            "distribution_hosts": self.distribution_hosts,
            "master_hostname": self.master_hostname,
            "is_master": self.is_master,
            "network_interface_name": self.network_interface_name,
            "runs_distributed_training": self.runs_distributed_training,
            "role": self.role.value,
            "node_rank": self.node_rank,
            "data_instance_groups": self.data_instance_groups,
            "data_hosts": self.data_hosts,
            "hyperparameters": self.hyperparameters,
            "additional_framework_parameters": self.additional_framework_parameters,
        }

    def __repr__(self) -> str:
        return (
            f"TrainingEnvironment(current_host={self._current_host!r}, "
            f"current_instance_group={self._current_instance_group!r}, role={self.role.value!r}, "
            f"distribution_hosts={self._distribution_hosts!r})"
        )


def _path_or_default(path: PathLike | None, file_name: str, base_dir: PathLike | None) -> str:
    if path is not None:
        return os.fspath(path)
    return config_file_path(file_name, base_dir)


__all__ = [
    "HostRole",
    "Role",
    "TrainingEnvironment",
]
