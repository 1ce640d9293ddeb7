"""SMDDP collective rules (seed 000): AllReduce and AllGather, and the launchers behind them."""

from __future__ import annotations

from collections.abc import Iterator

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.request.builder import SMDDP_ALLGATHER_ENV
from hetero_constructs.request.context import SMDDP_COLLECTIVE, RuleContext
from hetero_constructs.service import catalog
from hetero_constructs.spec.distribution import Launcher, SmddpCollective

_SEED = "Seed 000 (SMDDP collectives and launcher options)"


def _chosen(context: RuleContext) -> tuple[SmddpCollective, ...]:
    distribution = context.spec.distribution
    return tuple(distribution.smddp_collectives) if distribution else ()


@rule(
    "COL-NEEDS-SMDDP-LAUNCHER",
    source=_SEED,
    example='smddp_collective: "AllGather", distribution: {"torch_distributed": {"enabled": true}}',
    needs=(SMDDP_COLLECTIVE,),
)
def needs_smddp_launcher(context: RuleContext) -> Iterator[Finding]:
    """A collective is chosen only together with an SMDDP launcher.

    SMDDP launchers: ``pytorchddp``, ``smdistributed`` data parallel, ``torch_distributed``.
    Under ``mpi``, ``parameter_server`` or no launcher the choice would have no effect.
    """
    chosen = _chosen(context)
    kind = context.launcher_kind
    if chosen and (kind is None or not kind.is_smddp):
        yield Finding(
            "smddp_collective",
            "An SMDDP collective is chosen, but no SMDDP launcher is configured.",
            [c.value for c in chosen],
            "smddp_collective with pytorchddp, smdistributed.dataparallel or torch_distributed",
            "add an SMDDP launcher, or remove smddp_collective",
        )


@rule(
    "COL-ALLREDUCE-MPIRUN",
    source=_SEED + ": 'to replace NCCL AllReduce with SMDDP AllReduce, choose an mpirun-based "
    "option: smdistributed or pytorchddp'",
    example='smddp_collective: "AllReduce", distribution: {"pytorchddp": {"enabled": true}}',
    needs=(SMDDP_COLLECTIVE,),
)
def allreduce_needs_mpirun(context: RuleContext) -> Iterator[Finding]:
    """SMDDP AllReduce needs an mpirun-based launcher (``pytorchddp`` or ``smdistributed``)."""
    if (
        SmddpCollective.ALL_REDUCE in _chosen(context)
        and context.launcher_kind is Launcher.TORCH_DISTRIBUTED
    ):
        yield Finding(
            "smddp_collective",
            "SMDDP AllReduce is activated only under mpirun; torch_distributed (torchrun) "
            "activates SMDDP AllGather and leaves AllReduce to NCCL.",
            SmddpCollective.ALL_REDUCE.value,
            "AllReduce with pytorchddp or smdistributed.dataparallel; AllGather with any of the "
            "three",
            "switch the launcher to pytorchddp, or choose AllGather",
        )


@rule(
    "COL-EXCLUSIVE",
    source=_SEED + ": 'SMDDP AllReduce and SMDDP AllGather are not mutually compatible'",
    example='smddp_collective: "AllGather"',
    needs=(SMDDP_COLLECTIVE,),
)
def collectives_exclusive(context: RuleContext) -> Iterator[Finding]:
    """SMDDP AllReduce and AllGather are never used together.

    Both listed, or AllReduce chosen while the environment sets
    ``SMDATAPARALLEL_OPTIMIZE_SDP=true`` (which turns AllGather on under mpirun).
    """
    chosen = set(_chosen(context))
    both = {SmddpCollective.ALL_REDUCE, SmddpCollective.ALL_GATHER}
    if chosen >= both:
        yield Finding(
            "smddp_collective",
            "SMDDP AllReduce and SMDDP AllGather cannot be active in the same job.",
            sorted(c.value for c in chosen),
            "one of AllReduce, AllGather",
            "keep one collective",
        )
    elif (
        SmddpCollective.ALL_REDUCE in chosen
        and context.spec.environment.get(SMDDP_ALLGATHER_ENV, "").lower() == "true"
    ):
        yield Finding(
            f"environment.{SMDDP_ALLGATHER_ENV}",
            f"{SMDDP_ALLGATHER_ENV}=true turns SMDDP AllGather on, but AllReduce is chosen.",
            context.spec.environment[SMDDP_ALLGATHER_ENV],
            f"AllReduce without {SMDDP_ALLGATHER_ENV}, or smddp_collective AllGather",
            f"remove {SMDDP_ALLGATHER_ENV} from environment, or choose AllGather",
        )


@rule(
    "COL-INSTANCE",
    source="Seed 000: 'Instance types supported by the SageMaker AI data parallel library: "
    "ml.p4d.24xlarge, ml.p4de.24xlarge'",
    example='instance_groups: [{"name": "gpu", "instance_type": "ml.p4d.24xlarge", '
    '"instance_count": 2}]',
    severity="warning",
    needs=(SMDDP_COLLECTIVE,),
)
def collective_instance(context: RuleContext) -> Iterator[Finding]:
    """An SMDDP collective chosen under ``torch_distributed`` needs an SMDDP instance type.

    (Under ``pytorchddp`` and ``smdistributed`` rule LAU-SMDDP-INSTANCE already applies.) A
    warning where sources disagree; a type no source lists is LAU-SMDDP-INSTANCE-UNLISTED.
    """
    if not _chosen(context) or context.launcher_kind is not Launcher.TORCH_DISTRIBUTED:
        return
    instance_type = context.distribution_instance_type
    allowed = catalog.SMDDP_INSTANCE_TYPES[context.spec.framework]
    if (
        context.known(instance_type)
        and instance_type not in allowed
        and instance_type in catalog.SMDDP_LISTED_INSTANCE_TYPES
    ):
        yield Finding(
            context.distribution_path,
            "SMDDP collectives run only on the instance types the SMDDP library supports.",
            instance_type,
            ", ".join(allowed),
            f"use {allowed[0]} for the distribution group, or remove smddp_collective to keep NCCL",
        )


__all__ = [
    "allreduce_needs_mpirun",
    "collective_instance",
    "collectives_exclusive",
    "needs_smddp_launcher",
]
