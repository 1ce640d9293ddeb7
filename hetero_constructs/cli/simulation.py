"""The options that say how a simulated account runs training jobs and its schedule.

``run --local`` and ``local serve`` both take ``--outcome``, ``--job-duration`` and
``--reconcile-every``, each with its own defaults: a one-off local run ends as soon as it can,
a served account behaves like a slow, real one.
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
        return click.option(
            "--outcome",
            "outcomes",
            multiple=True,
            help=f"{scope}how each training job ends, in creation order (Completed, "
            "Failed[:REASON], Stopped[:STATUS], ResourceLimitExceeded); then Completed",
        )(function)

    return decorate


def parse_outcomes(texts: Sequence[str]) -> list[Outcome]:
    """The ``--outcome`` values, or the option's usage error."""
    from hetero_constructs.local.training import Outcome

    try:
        return [Outcome.parse(text) for text in texts]
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="'--outcome'") from None


__all__ = ["parse_outcomes", "simulation_options"]
