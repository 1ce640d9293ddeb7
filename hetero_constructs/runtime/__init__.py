"""Runtime helper for SageMaker heterogeneous-cluster training scripts.

It runs *inside* the training container, so it uses the standard library only and imports
nothing from the rest of ``hetero_constructs``. It works in two ways:

* installed with the library: ``from hetero_constructs.runtime import TrainingEnvironment``;
* copied into the training code directory (the estimator's ``source_dir``) as a top-level
  package: ``cp -r hetero_constructs/runtime <source_dir>/hetero_runtime``, then
  ``from hetero_runtime import TrainingEnvironment``. Only relative imports are used inside
  this folder, so the copy needs nothing else.

Typical use in a script that every instance group runs::

    env = TrainingEnvironment()
    if env.role is HostRole.DISTRIBUTED:
        train(rank_of_node=env.node_rank, master=env.master_hostname)
    elif env.role is HostRole.DATA:
        serve_data(to=env.distribution_hosts)

``MetricsReporter`` (``metrics``) writes the lines that tell SageMaker, the dashboard and
``hetero-train`` which host is in which group, its samples per second and its data wait.

The attribute names and values match ``sagemaker_training.environment.Environment`` (see
:class:`TrainingEnvironment`). ``Role`` is the former name of :class:`HostRole`.
"""

from __future__ import annotations

from .config import (
    BASE_DIR_ENV,
    DEFAULT_BASE_DIR,
    DISTRIBUTION_GROUPS_KEY,
    HOMOGENEOUS_GROUP,
    HYPERPARAMETERS_FILE,
    LAUNCHER_FLAGS,
    RESOURCE_CONFIG_FILE,
    TOOLKIT_HYPERPARAMETERS,
    config_file_path,
    decode_hyperparameters,
    resolve_base_dir,
    split_hyperparameters,
)
from .environment import HostRole, Role, TrainingEnvironment
from .errors import TrainingEnvironmentError
from .metrics import MetricsReporter

__all__ = [
    "BASE_DIR_ENV",
    "DEFAULT_BASE_DIR",
    "DISTRIBUTION_GROUPS_KEY",
    "HOMOGENEOUS_GROUP",
    "HYPERPARAMETERS_FILE",
    "LAUNCHER_FLAGS",
    "RESOURCE_CONFIG_FILE",
    "TOOLKIT_HYPERPARAMETERS",
    "HostRole",
    "MetricsReporter",
    "Role",
    "TrainingEnvironment",
    "TrainingEnvironmentError",
    "config_file_path",
    "decode_hyperparameters",
    "resolve_base_dir",
    "split_hyperparameters",
]
