"""AWS clients from the standard credential chain, and AWS errors said in the user's terms."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
)

from hetero_constructs.runs.clients import CLIENT_CONFIG, RunClients, error_code, new_session


@dataclass(frozen=True)
class AwsOptions:
    """``--profile``, ``--region`` and ``--endpoint-url``; unset ones come from the standard
    chain (``AWS_PROFILE``, ``AWS_REGION``/``AWS_DEFAULT_REGION``, the config files)."""

    profile: str | None = None
    region: str | None = None
    endpoint_url: str | None = None

    def session(self) -> boto3.Session:
        return new_session(self.profile, self.region)

    def client(self, service: str, session: boto3.Session | None = None) -> Any:
        return (session or self.session()).client(
            service, endpoint_url=self.endpoint_url, config=CLIENT_CONFIG
        )

    def run_clients(self) -> RunClients:
        return RunClients.create(self.session(), endpoint_url=self.endpoint_url)


def describe_aws_error(error: Exception) -> str:
    """What went wrong talking to AWS, and how to fix it."""
    if isinstance(error, NoRegionError):
        return (
            "No AWS region is set. Fix: pass --region, set AWS_REGION, or set a region in the "
            "profile's config."
        )
    if isinstance(error, NoCredentialsError):
        return (
            "No AWS credentials were found. Fix: pass --profile, set AWS_PROFILE, or configure "
            "credentials (aws configure / aws sso login)."
        )
    if isinstance(error, ProfileNotFound):
        return f"{error}. Fix: name a profile from ~/.aws/config, or leave --profile out."
    if isinstance(error, EndpointConnectionError):
        return f"{error}. Fix: check --endpoint-url and the network."
    if isinstance(error, ClientError):
        operation = getattr(error, "operation_name", "the call")
        message = error.response.get("Error", {}).get("Message", "")
        return f"AWS refused {operation}: {error_code(error)}: {message}"
    if isinstance(error, BotoCoreError):
        return str(error)
    return repr(error)


AWS_ERRORS: tuple[type[Exception], ...] = (BotoCoreError, ClientError)


__all__ = [
    "AWS_ERRORS",
    "AwsOptions",
    "RunClients",
    "describe_aws_error",
    "error_code",
]
