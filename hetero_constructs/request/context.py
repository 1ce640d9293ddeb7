"""What every rule sees: the spec, the deployment inputs, and facts derived from them once."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

from hetero_constructs.service import catalog
from hetero_constructs.spec._directory_memo import LISTINGS
from hetero_constructs.spec.cluster import InstanceGroup
from hetero_constructs.spec.distribution import Launcher, LauncherConfig, SmddpCollective
from hetero_constructs.spec.schema import schema_of
from hetero_constructs.spec.training import TrainingSpec

TokenPredicate = Callable[[Any], bool]


def never_a_token(_: Any) -> bool:
    return False


@dataclass(frozen=True)
class Deployment:
    """Values that come from where the job is deployed rather than from the spec.

    Each one overrides the spec's own value when given. ``submit_directory`` is the S3 URI of
    the packaged ``source_dir`` (the constructs upload it as a CDK asset).
    """

    job_name: str | None = None
    role_arn: str | None = None
    region: str | None = None
    submit_directory: str | None = None
    # The Deep Learning Container resolved by the deployment (the constructs use aws-cdk-lib's
    # region facts). Unlike the spec's image_uri it is still a DLC: version rules apply.
    dlc_image_uri: str | None = None


_NO_DEPLOYMENT = Deployment()

#: The execution role a spec is judged with when the deployment will supply it (AWS's
#: documentation account id; never sent anywhere).
PENDING_ROLE_ARN = "arn:aws:iam::111122223333:role/supplied-by-the-deployment"

# -- Local files -----------------------------------------------------------------------------
# Rules ask whether a local source_dir is a directory and holds a file: from the directory's
# listing, kept while the directory is unchanged (``spec._directory_memo``).


def _read_files(directory: str) -> frozenset[str] | None:
    try:
        with os.scandir(directory) as entries:
            return frozenset(e.name for e in entries if _is_regular_file(e))
    except OSError:
        return None


def _is_regular_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _present(value: Any) -> bool:
    return value is not None


# -- Optional features -------------------------------------------------------------------------
# A rule about an optional part of a spec (its tags, a VPC, a launcher, ...) names the features
# it needs (``rule(needs=...)``): it can find something only in a spec that uses one of them,
# so the runner skips it for the others. A feature is named by its spec-file key: every
# optional field of the spec (one whose default is no value: ``None`` or an empty collection,
# read from its declaration), and the distribution's launchers and options.
LAUNCHER_OPTIONS = ("custom_mpi_options", "processes_per_host")
MODEL_PARALLEL = "smdistributed.modelparallel"
SMDDP_COLLECTIVE = "smddp_collective"


def optional_fields(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields of spec class ``cls`` whose default is no value: those whose default is
    ``None``, and those whose default is an empty collection."""
    return _optional_fields(cls)


# Cached per class behind a plain function: mypy takes no frozen dataclass class as Hashable.
@cache
def _optional_fields(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    fields = schema_of(cls)
    return (
        tuple(d.name for d in fields if d.default is None),
        tuple(d.name for d in fields if isinstance(d.default, tuple | Mapping) and not d.default),
    )


FEATURES = frozenset(
    {
        *Launcher,
        *LAUNCHER_OPTIONS,
        MODEL_PARALLEL,
        SMDDP_COLLECTIVE,
        *optional_fields(TrainingSpec)[0],
        *optional_fields(TrainingSpec)[1],
    }
)


def spec_features(spec: TrainingSpec) -> frozenset[str]:
    """The features of ``FEATURES`` the spec uses: a collection that is not empty, a value that
    is set (0 and "" are set), a launcher or launcher option that is configured."""
    used: list[str] = []
    distribution = spec.distribution
    if distribution is not None:
        for entry in distribution.launchers:
            used.append(entry.kind)
            if entry.custom_mpi_options is not None:
                used.append("custom_mpi_options")
            if entry.processes_per_host is not None:
                used.append("processes_per_host")
        if distribution.model_parallel_parameters is not None:
            used.append(MODEL_PARALLEL)
        if distribution.smddp_collectives:
            used.append(SMDDP_COLLECTIVE)
    values, collections = optional_fields(type(spec))
    used += [name for name in values if getattr(spec, name) is not None]
    used += [name for name in collections if getattr(spec, name)]
    return frozenset(used)


class RuleContext:
    """The spec plus derived facts; cached so each is computed once per validation."""

    def __init__(
        self,
        spec: TrainingSpec,
        deployment: Deployment | None = None,
        is_token: TokenPredicate = never_a_token,
        *,
        deployment_pending: bool = False,
    ) -> None:
        self.spec = spec
        self.deployment = deployment or _NO_DEPLOYMENT
        self.is_token = is_token
        #: The spec alone is judged: what a deployment supplies (the region, the execution
        #: role) is not missing yet, only wrong when given (``validate(spec)``).
        self.deployment_pending = deployment_pending
        #: ``known(value)``: the value is present and concrete (not a CDK token to be resolved
        #: at deploy). Without a token predicate every present value is concrete.
        self.known: Callable[[Any], bool] = (
            _present if is_token is never_a_token else self._present_and_concrete
        )
        self._stats: dict[str, os.stat_result | None] = {}
        # Deployment inputs, the deployment's first; plain attributes, as each is one lookup.
        self.region: str | None = self.deployment.region or spec.region
        self.role_arn: str | None = self.deployment.role_arn or spec.role
        if self.role_arn is None and deployment_pending:
            # Judged as the request will be: with the role the deployment gives (any valid ARN).
            self.role_arn = PENDING_ROLE_ARN
        self.output_path: str | None = spec.output_path
        #: A custom image named by the user (the DLC version rules do not apply to it).
        self.explicit_image_uri: str | None = spec.image_uri
        # The distribution's parts, plain attributes too: rules read them on every plan.
        distribution = spec.distribution
        self.launchers: tuple[LauncherConfig, ...] = (
            tuple(distribution.launchers) if distribution else ()
        )
        #: The launcher when exactly one is set; rules about combinations handle the rest.
        self.launcher: LauncherConfig | None = (
            self.launchers[0] if len(self.launchers) == 1 else None
        )
        self.launcher_kind: Launcher | None = self.launcher.kind if self.launcher else None
        self.model_parallel: bool = bool(
            distribution and distribution.model_parallel_parameters is not None
        )
        self.requested_distribution_groups: tuple[str, ...] = (
            distribution.group_names if distribution else ()
        )

    def _present_and_concrete(self, value: Any) -> bool:
        return value is not None and not self.is_token(value)

    # -- local files, as ``os.path.isdir`` and ``os.path.isfile`` see them --------------------

    def stat(self, path: str) -> os.stat_result | None:
        """``os.stat(path)``, once per path and validation (a validation is one snapshot)."""
        stats = self._stats
        if path not in stats:
            try:
                stats[path] = os.stat(path)
            except (OSError, ValueError):
                stats[path] = None
        return stats[path]

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory (symbolic links followed), like ``os.path.isdir``."""
        info = self.stat(path)
        return info is not None and stat.S_ISDIR(info.st_mode)

    def is_file(self, path: str) -> bool:
        """Whether ``path`` is a regular file (links followed), like ``os.path.isfile``.

        Answered from its directory's listing (names match exactly, as on Linux where the
        training container runs); one stat of the directory per validation shows whether the
        listing kept from an earlier validation still holds.
        """
        directory, name = os.path.split(path)
        if name in ("", os.curdir, os.pardir):
            return os.path.isfile(path)
        return self._listed_file(directory or os.curdir, name, path)

    def holds_file(self, directory: str, name: str) -> bool:
        """``is_file(os.path.join(directory, name))``; a plain file name is looked up in the
        directory's listing without joining and splitting the path."""
        if os.sep in name or name in ("", os.curdir, os.pardir):
            return self.is_file(os.path.join(directory, name))
        return self._listed_file(directory or os.curdir, name, None)

    def _listed_file(self, directory: str, name: str, path: str | None) -> bool:
        """Whether the entry ``name`` of ``directory`` (at ``path``, joined when None) is a
        regular file, from the directory's listing."""
        info = self.stat(directory)
        files = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            files = LISTINGS.files(directory, info, _read_files)
        if files is None:
            return os.path.isfile(os.path.join(directory, name) if path is None else path)
        return name in files

    @cached_property
    def features(self) -> frozenset[str]:
        """The optional features the spec uses (``spec_features``)."""
        return spec_features(self.spec)

    # -- distribution ---------------------------------------------------------------------------

    @cached_property
    def distribution_group(self) -> InstanceGroup | None:
        """The instance group that runs the launcher, when it is unambiguous.

        One group named in the distribution that exists, or, with no group named, the only
        group of the cluster (chosen automatically as the SDK does).
        """
        if not self.spec.instance_groups or not self.launchers:
            return None
        requested = self.requested_distribution_groups
        if len(requested) == 1:
            return self.spec.group(requested[0])
        if not requested and len(self.spec.instance_groups) == 1:
            return self.spec.instance_groups[0]
        return None

    @cached_property
    def distribution_group_candidates(self) -> tuple[InstanceGroup, ...]:
        """The groups the launcher could be meant to run on, when the spec leaves it open.

        Empty when the distribution group is known (or there is no launcher or no group). Else
        the named groups that exist, or, with none of them, every group of the cluster.
        """
        groups = self.spec.instance_groups
        if not groups or not self.launchers or self.distribution_group is not None:
            return ()
        requested = self.requested_distribution_groups
        named = tuple(g for g in groups if g.name in requested)
        return named or tuple(groups)

    def reading(
        self, *, launcher: LauncherConfig | None = None, group: InstanceGroup | None = None
    ) -> RuleContext:
        """The same spec judged as if ``launcher`` were its one launcher (of several enabled)
        and ``group`` its one distribution group (of those it could mean)."""
        other = RuleContext(
            self.spec, self.deployment, self.is_token, deployment_pending=self.deployment_pending
        )
        if launcher is not None:
            other.launcher, other.launcher_kind = launcher, launcher.kind
        if group is not None:
            # Set where the cached property keeps its value: the property never runs.
            other.__dict__["distribution_group"] = group
        return other

    @cached_property
    def distribution_instance_type(self) -> str | None:
        """The instance type the launcher runs on: the distribution group's, or the cluster's."""
        if self.spec.instance_groups:
            group = self.distribution_group
            return group.instance_type if group else None
        return self.spec.instance_type

    @cached_property
    def distribution_path(self) -> str:
        """Where in the spec the distribution's instance type comes from, for messages."""
        group = self.distribution_group
        if group is not None:
            index = self.spec.instance_groups.index(group)
            return f"instance_groups[{index}].instance_type"
        return "instance_type"

    @cached_property
    def instance_types(self) -> tuple[str, ...]:
        if self.spec.instance_groups:
            return tuple(g.instance_type for g in self.spec.instance_groups)
        return (self.spec.instance_type,) if self.spec.instance_type else ()

    @cached_property
    def uses_gpu_image(self) -> bool:
        """GPU image when the distribution group has GPUs, or without one when any group has."""
        chosen = self.distribution_instance_type
        if chosen is not None and self.known(chosen):
            return catalog.is_gpu(chosen)
        return any(catalog.is_gpu(t) for t in self.instance_types if self.known(t))

    # -- collectives ----------------------------------------------------------------------------

    @cached_property
    def effective_collective(self) -> SmddpCollective | None:
        """The SMDDP collective in effect: the one chosen, or the launcher's default (seed 000)."""
        chosen = self.spec.distribution.smddp_collectives if self.spec.distribution else ()
        if len(chosen) == 1:
            return chosen[0]
        kind = self.launcher_kind
        if chosen or kind is None or not kind.is_smddp:
            return None
        if kind is Launcher.TORCH_DISTRIBUTED:
            return SmddpCollective.ALL_GATHER
        return SmddpCollective.ALL_REDUCE

    # -- framework ------------------------------------------------------------------------------

    @cached_property
    def release(self) -> catalog.ImageRelease | None:
        version = self.spec.framework_version
        return catalog.find_release(self.spec.framework, version) if version else None

    @cached_property
    def version(self) -> catalog.Version | None:
        version = self.spec.framework_version
        if version is None or self.is_token(version):
            return None
        return catalog.resolved_version(self.release, version)

    def version_in(self, versions: frozenset[str]) -> bool:
        """Whether the framework version, as typed or with its alias resolved, is listed."""
        typed = self.spec.framework_version
        if typed in versions:
            return True
        return self.release is not None and self.release.version in versions


__all__ = [
    "FEATURES",
    "LAUNCHER_OPTIONS",
    "MODEL_PARALLEL",
    "PENDING_ROLE_ARN",
    "SMDDP_COLLECTIVE",
    "Deployment",
    "RuleContext",
    "TokenPredicate",
    "never_a_token",
    "optional_fields",
    "spec_features",
]
