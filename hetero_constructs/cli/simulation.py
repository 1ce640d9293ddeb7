"""The options that say how a local account runs training jobs and its schedule.

``run --local`` and ``local serve`` both take ``--outcome``, ``--simulate``, ``--python``,
``--job-duration`` and ``--reconcile-every``, each with its own defaults: a one-off local run
ends as soon as it can, a served account behaves like a slow, real one. A training job runs the
job's own code on this machine unless ``--outcome`` (or ``--simulate``) scripts its end: a drill,
labelled ``simulated`` wherever it shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from hetero_constructs.local.training import Outcome

F = TypeVar("F", bound=Callable[..., Any])


def simulation_options(
    *, job_duration: float, reconcile_every: float | None, scope: str = ""
) -> Callable[[F], F]:
    """``--outcome``, ``--job-duration`` and ``--reconcile-every`` with these defaults
    (``reconcile_every=None``: only when the execution is stuck); ``scope`` starts each help
    text (e.g. ``"with --local: "``)."""

    def decorate(function: F) -> F:
        function = click.option(
            "--job-duration",
            type=click.FloatRange(min=0.0),
            default=job_duration,
            show_default=True,
            metavar="SECONDS",
            help=f"{scope}how long each simulated training job runs (wall-clock seconds"
            + ("; 0: it ends as soon as the run's code is idle)" if not job_duration else ")"),
        )(function)
        function = click.option(
            "--reconcile-every",
            type=click.FloatRange(min=0.0, min_open=True),
            default=reconcile_every,
            show_default=reconcile_every is not None,
            metavar="SECONDS",
            help=f"{scope}fire the scheduled rules (the reconciler) every SECONDS"
            + ("" if reconcile_every else "; they also fire when the execution is stuck"),
        )(function)
        function = click.option(
            "--python",
            metavar="PATH",
            help=f"{scope}the Python that runs the training jobs' entry points (default: the "
            "one running hetero-train; what the scripts import must be installed there)",
        )(function)
        function = click.option(
            "--simulate",
            metavar="OUTCOME",
            help=f"{scope}end every training job beyond the --outcome ones so, as a drill "
            "that runs no code (e.g. Completed); default: they run the job's own code",
        )(function)
        return click.option(
            "--outcome",
            "outcomes",
            multiple=True,
            help=f"{scope}script how each training job ends, in creation order, as a drill "
            "that runs no code (Completed, Failed[:REASON], Stopped[:STATUS], "
            "ResourceLimitExceeded); later jobs run for real (or as --simulate says)",
        )(function)

    return decorate


def parse_outcomes(texts: Sequence[str]) -> list[Outcome]:
    """The ``--outcome`` values, or the option's usage error."""
    from hetero_constructs.local.training import Outcome

    try:
        return [Outcome.parse(text) for text in texts]
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="'--outcome'") from None


def parse_simulate(text: str | None) -> Outcome | None:
    """The ``--simulate`` value, or the option's usage error."""
    if text is None:
        return None
    from hetero_constructs.local.training import Outcome

    try:
        return Outcome.parse(text)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="'--simulate'") from None


__all__ = ["parse_outcomes", "parse_simulate", "simulation_options"]
