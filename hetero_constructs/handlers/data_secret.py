"""A fresh data-plane secret for every heterogeneous job, in the job's environment.

The runtime helper's data plane (``hetero_runtime.data``) admits only connections that prove
the job's secret; this is where a job gets one. It is added to the request as it is sent, not
to the request the attempt plans: a retried submission re-plans the same request and compares
it with the job it finds, and the secret differs on every send.
"""

from __future__ import annotations

import secrets
from typing import Any

DATA_SECRET_ENV = "HETERO_DATA_SECRET"
"""The variable the data plane reads (``hetero_runtime.data.SECRET_ENV``; the Lambda package
does not carry the runtime helper, a test keeps the two equal)."""


def with_data_secret(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with a random 256-bit secret in ``Environment`` when the job has more than
    one instance group, the variable is not set already and the API's variable count allows
    one more (a full environment is left as the user wrote it; the data plane then says the
    secret is missing)."""
    from hetero_constructs.service import model

    groups = request.get("ResourceConfig", {}).get("InstanceGroups") or []
    environment = dict(request.get("Environment") or {})
    limit = model.bounds("Environment").maximum
    if len(groups) < 2 or DATA_SECRET_ENV in environment:
        return request
    if limit is not None and len(environment) >= limit:
        return request
    environment[DATA_SECRET_ENV] = secrets.token_hex(32)
    return {**request, "Environment": environment}


__all__ = ["DATA_SECRET_ENV", "with_data_secret"]
