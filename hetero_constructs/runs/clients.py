"""The boto3 clients a training run is read and steered with, from any session or endpoint."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config

from hetero_constructs.contract.training_job import error_code

# The SDK's standard retry mode rides out throttling while a run is followed.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 8})


@functools.cache
def service_models() -> botocore.loaders.Loader:
    """One loader per process: each service model (SageMaker's is large) is parsed once, not
    once per session (the local runner and the tests open many)."""
    return botocore.loaders.create_loader()


def new_session(profile: str | None = None, region: str | None = None) -> boto3.Session:
    """A boto3 session from the standard chain, sharing the process's service models.

    ``AWS_REGION`` counts as the other SDKs read it (botocore reads only
    ``AWS_DEFAULT_REGION``)."""
    core = botocore.session.Session(profile=profile)
    region = region or os.environ.get("AWS_REGION") or None
    core.register_component("data_loader", service_models())
    return boto3.Session(botocore_session=core, region_name=region)


@dataclass(frozen=True)
class RunClients:
    """The clients a training run is found, read and steered with.

    Any boto3 clients do: real AWS, moto in-process (``mock_aws``) or a moto server such as
    ``hetero-train local serve`` (``AWS_ENDPOINT_URL``).
    """

    stepfunctions: Any
    sagemaker: Any
    logs: Any
    #: Resolves ``STACK/CONSTRUCT_ID`` (``runs.targets``); None: names and ARNs only.
    cloudformation: Any = None

    @classmethod
    def create(
        cls,
        session: boto3.Session | None = None,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
    ) -> RunClients:
        """Clients of ``session`` (default: a new one from the standard chain; boto3 honours
        ``AWS_ENDPOINT_URL``), with standard retries."""
        session = session or new_session(region=region)

        def client(service: str) -> Any:
            return session.client(
                service, region_name=region, endpoint_url=endpoint_url, config=CLIENT_CONFIG
            )

        return cls(
            client("stepfunctions"), client("sagemaker"), client("logs"), client("cloudformation")
        )


__all__ = [
    "CLIENT_CONFIG",
    "RunClients",
    "error_code",
    "new_session",
    "service_models",
]
