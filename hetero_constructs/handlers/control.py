"""AWS clients acting as a job's control role.

Each training task has a small control role holding exactly what its jobs need (create with the
spec's conditions, describe, stop, tag, pass the execution role, report to its state machines).
The shared Lambdas assume it per job, so their own policies do not grow with the number of jobs.
Credentials are cached per role for most of their hour.
"""

from __future__ import annotations

import time
from typing import Any

import boto3

from hetero_constructs.handlers import environment

_SESSION_SECONDS = 3600
_REFRESH_MARGIN = 600
_credentials: dict[str, tuple[float, dict[str, str]]] = {}
_clients: dict[tuple[str, str, int, str | None], Any] = {}


def _assumed(role_arn: str) -> dict[str, str]:
    cached = _credentials.get(role_arn)
    if cached is not None and cached[0] > time.time() + _REFRESH_MARGIN:
        return cached[1]
    answer = boto3.client("sts", region_name=environment.region()).assume_role(
        RoleArn=role_arn, RoleSessionName="hetero-constructs", DurationSeconds=_SESSION_SECONDS
    )["Credentials"]
    credentials = {
        "aws_access_key_id": answer["AccessKeyId"],
        "aws_secret_access_key": answer["SecretAccessKey"],
        "aws_session_token": answer["SessionToken"],
    }
    expires = answer["Expiration"]
    expires_at = expires.timestamp() if hasattr(expires, "timestamp") else time.time() + 3000
    _credentials[role_arn] = (expires_at, credentials)
    for key in [k for k in _clients if k[0] == role_arn]:
        del _clients[key]
    return credentials


def client(role_arn: str, service: str) -> Any:
    """A client of ``service`` with the role's credentials (the default session's hooks apply)."""
    credentials = _assumed(role_arn)
    # Clients belong to the default session (its event hooks); a new session gets new clients.
    region = environment.region()
    key = (role_arn, service, id(boto3.DEFAULT_SESSION), region)
    existing = _clients.get(key)
    if existing is None:
        existing = _clients[key] = boto3.client(service, region_name=region, **credentials)
    return existing


def forget() -> None:
    """Drop cached credentials and clients (tests run many accounts in one process)."""
    _credentials.clear()
    _clients.clear()


__all__ = [
    "client",
    "forget",
]
