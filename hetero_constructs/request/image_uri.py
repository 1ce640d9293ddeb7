"""Deep Learning Container image URIs: ``{account}.dkr.ecr.{region}.{suffix}/{repo}:{tag}``."""

from __future__ import annotations

from hetero_constructs.request.context import RuleContext
from hetero_constructs.service import catalog
from hetero_constructs.service.model import dns_suffix


def image_repository(context: RuleContext) -> str:
    release = context.release
    if release is not None:
        return release.repository
    return f"{context.spec.framework.value}-training"


def image_tag(context: RuleContext) -> str:
    """``{version}-{cpu|gpu}-{py}``; the version as the user typed it, as the SDK does."""
    processor = "gpu" if context.uses_gpu_image else "cpu"
    return f"{context.spec.framework_version}-{processor}-{context.spec.py_version}"


def dlc_image_uri(context: RuleContext) -> str | None:
    """The DLC image for a concrete region, or ``None`` when the region has no known account."""
    region = context.region
    if region is None or context.is_token(region):
        return None
    account = catalog.DLC_ACCOUNTS.get(region)
    suffix = dns_suffix(region)
    if account is None or suffix is None:
        return None
    return f"{account}.dkr.ecr.{region}.{suffix}/{image_repository(context)}:{image_tag(context)}"


def training_image(context: RuleContext) -> str | None:
    return context.explicit_image_uri or context.deployment.dlc_image_uri or dlc_image_uri(context)


__all__ = [
    "dlc_image_uri",
    "image_repository",
    "image_tag",
    "training_image",
]
