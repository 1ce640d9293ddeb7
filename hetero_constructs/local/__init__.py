"""Run synthesized training state machines locally, with no AWS account (moto in-process).

``LocalCloud`` deploys a template's tables, functions and state machines into moto and runs
executions; ``python -m hetero_constructs.local TEMPLATE`` is its command line.
"""

from __future__ import annotations

from hetero_constructs.local.cloud import ExecutionResult, LocalCloud, main

__all__ = ["ExecutionResult", "LocalCloud", "main"]
