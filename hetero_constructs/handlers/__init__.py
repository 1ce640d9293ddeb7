"""The Lambda functions' logic: what the submit and lifecycle functions of a runner do.

``submit``: validates an execution's overrides and creates the attempt's training job;
``events``: settles ended jobs, stops orphans and reconciles; ``outcome``: reports a job's end
to its waiting task; ``token_store``: the run table; ``control``: clients acting as a job's
control role. The top-level ``lambda/`` folder holds only the entry points the functions name.
"""

__all__: list[str] = []
