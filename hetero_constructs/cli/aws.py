"""AWS clients from the standard credential chain, and AWS errors said in the user's terms."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
)

# The SDK's standard retry mode rides out throttling while a run is followed.
_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 8})


@functools.cache
def _service_models() -> botocore.loaders.Loader:
    """One loader per process: each service model (SageMaker's is large) is parsed once, not
    once per session (the local runner and the tests open many)."""
    return botocore.loaders.create_loader()


@dataclass(frozen=True)
class RunClients:
    """The three clients a training run is read and steered with.

    Any boto3 clients do: real AWS, moto in-process (``mock_aws``) or a moto server.
    """

    stepfunctions: Any
    sagemaker: Any
    logs: Any


@dataclass(frozen=True)
class AwsOptions:
    """``--profile``, ``--region`` and ``--endpoint-url``; unset ones come from the standard
    chain (``AWS_PROFILE``, ``AWS_REGION``/``AWS_DEFAULT_REGION``, the config files)."""

    profile: str | None = None
    region: str | None = None
    endpoint_url: str | None = None

    def session(self) -> boto3.Session:
        core = botocore.session.Session(profile=self.profile)
        core.register_component("data_loader", _service_models())
        return boto3.Session(botocore_session=core, region_name=self.region)

    def client(self, service: str, session: boto3.Session | None = None) -> Any:
        return (session or self.session()).client(
            service, endpoint_url=self.endpoint_url, config=_CLIENT_CONFIG
        )

    def run_clients(self) -> RunClients:
        session = self.session()
        return RunClients(
            stepfunctions=self.client("stepfunctions", session),
            sagemaker=self.client("sagemaker", session),
            logs=self.client("logs", session),
        )


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


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
