"""Facts about frameworks, containers and instance types that botocore's model does not carry.

Every table names its source. The API's own enums and limits are *not* here: they are read
from botocore's service model in ``service.model``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hetero_constructs.spec.training import Framework

Version = tuple[int, ...]


def words(text: str) -> list[str]:
    """Whitespace-separated names, so long tables stay readable."""
    return text.split()


# ASCII digits, at most 9 per part: a version, never a number Python refuses to convert.
_VERSION = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,3}")


def parse_version(text: str) -> Version | None:
    """``"2.3.0"`` -> ``(2, 3, 0)``; ``None`` when the text is not a dotted number."""
    if not _VERSION.fullmatch(text):
        return None
    return tuple(map(int, text.split(".")))


# -- Instance types ----------------------------------------------------------------------------
# SDK v2 src/sagemaker/utils.py get_instance_type_family; processor choice in image_uris.py.

_FAMILY = re.compile(r"^ml[._]([a-z\d-]+)\.?\w*$")


def instance_family(instance_type: str) -> str:
    match = _FAMILY.match(instance_type)
    return match.group(1) if match else ""


def is_trainium(instance_type: str) -> bool:
    return instance_family(instance_type).startswith("trn")


def is_gpu(instance_type: str) -> bool:
    """GPU instances: the SDK's rule, a family starting with ``p`` or ``g``."""
    return instance_family(instance_type).startswith(("p", "g"))


def is_accelerated(instance_type: str) -> bool:
    return is_gpu(instance_type) or is_trainium(instance_type)


# -- Launcher support lists (SDK v2 src/sagemaker/fw_utils.py; facts file section 1.3) ----------

SMDDP_FRAMEWORK_VERSIONS: dict[Framework, frozenset[str]] = {
    Framework.PYTORCH: frozenset(
        words(
            "1.6 1.6.0 1.7 1.7.1 1.8 1.8.0 1.8.1 1.9 1.9.0 1.9.1 1.10 1.10.0 1.10.2 1.11 1.11.0 "
            "1.12 1.12.0 1.12.1 1.13.1 2.0.0 2.0.1 2.1.0 2.1.2 2.2.0"
        )
    ),
    Framework.TENSORFLOW: frozenset(
        words(
            "2.3 2.3.1 2.3.2 2.4 2.4.1 2.4.3 2.5 2.5.0 2.5.1 2.6 2.6.0 2.6.2 2.6.3 2.7 2.7.1 2.8 "
            "2.8.0 2.9 2.9.1 2.9.2 2.10 2.10.1 2.11 2.11.0"
        )
    ),
}

# SMDDP instance types per framework: seed 000 (PyTorch: p4d/p4de; TensorFlow: p3.16xlarge,
# p3dn.24xlarge, p4d.24xlarge). The SDK dropped this check in v2.221.1; we keep it.
SMDDP_INSTANCE_TYPES: dict[Framework, tuple[str, ...]] = {
    Framework.PYTORCH: ("ml.p4d.24xlarge", "ml.p4de.24xlarge"),
    Framework.TENSORFLOW: ("ml.p3.16xlarge", "ml.p3dn.24xlarge", "ml.p4d.24xlarge"),
}

# Every instance type any source lists for SMDDP: the SDK's SM_DATAPARALLEL_SUPPORTED_INSTANCE_TYPES
# (before v2.221.1 removed the check) and seed 000's lists. A type outside it runs SMDDP on the
# word of no source at all; a type in it but not in SMDDP_INSTANCE_TYPES is where sources disagree.
SMDDP_LISTED_INSTANCE_TYPES = frozenset(
    {"ml.p3.16xlarge", "ml.p3dn.24xlarge", "ml.p4d.24xlarge", "ml.p4de.24xlarge"}
).union(*SMDDP_INSTANCE_TYPES.values())

TORCH_DISTRIBUTED_GPU_VERSIONS = frozenset(
    words("1.13.1 2.0.0 2.0.1 2.1.0 2.1.2 2.2.0 2.3.0 2.3.1 2.4.1 2.5.1 2.6.0 2.7.1 2.8.0")
)
TORCH_DISTRIBUTED_TRAINIUM_VERSIONS = frozenset(
    words("1.11 1.11.0 1.12 1.12.0 1.12.1 1.13.1 2.0.0")
)

MWMS_MIN_TENSORFLOW: Version = (2, 9)

# Heterogeneous clusters: seed 002 ("PyTorch v1.10 or later and TensorFlow v2.6 or later").
HETEROGENEOUS_MIN_VERSION: dict[Framework, Version] = {
    Framework.PYTORCH: (1, 10),
    Framework.TENSORFLOW: (2, 6),
}

# SMP v1 parameter domains (SDK v2 fw_utils.validate_mp_config).
SMP_ENUM_PARAMETERS: dict[str, tuple[str, ...]] = {
    "pipeline": ("simple", "interleaved", "_only_forward"),
    "placement_strategy": ("spread", "cluster"),
    "optimize": ("speed", "memory"),
}
SMP_POSITIVE_INT_PARAMETERS = ("microbatches", "partitions", "active_microbatches")
SMP_BOOL_PARAMETERS = (
    "auto_partition",
    "contiguous",
    "load_partition",
    "horovod",
    "ddp",
    "deterministic_server",
)

# -- Deep Learning Container images (SDK v2 image_uri_config/pytorch.json, tensorflow.json) -----

# Account that hosts pytorch-training / tensorflow-training in each region (facts file section 7).
DLC_ACCOUNTS: dict[str, str] = {
    **dict.fromkeys(
        words(
            "us-east-1 us-east-2 us-west-1 us-west-2 ca-central-1 sa-east-1 eu-central-1 eu- "
            "north-1 eu-west-1 eu-west-2 eu-west-3 ap-northeast-1 ap-northeast-2 ap-south-1 ap- "
            "southeast-1 ap-southeast-2"
        ),
        "763104351884",
    ),
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-3": "364406365360",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "ca-west-1": "204538143572",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "eu-central-2": "380420809688",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "mx-central-1": "637423239942",
    "us-gov-east-1": "446045086412",
    "us-gov-west-1": "442386744353",
    "us-iso-east-1": "886529160074",
    "us-isob-east-1": "094389454867",
    "us-isof-east-1": "303241398832",
    "us-isof-south-1": "454834333376",
}

_ISO = frozenset({"us-iso-east-1", "us-isob-east-1"})
_ISOF = frozenset({"us-isof-east-1", "us-isof-south-1"})
ALL_REGIONS = frozenset(DLC_ACCOUNTS)
REGIONS_WITHOUT_ISOF = ALL_REGIONS - _ISOF
REGIONS_WITHOUT_ISO = ALL_REGIONS - _ISOF - _ISO


@dataclass(frozen=True)
class ImageRelease:
    """One framework version with a training image in the SDK's image config."""

    framework: Framework
    version: str
    py_versions: tuple[str, ...]
    repository: str
    regions: frozenset[str]


_PT = Framework.PYTORCH
_TF = Framework.TENSORFLOW

_PT_REPO, _TF_REPO = "pytorch-training", "tensorflow-training"
# (framework, versions, py_versions, regions, repository), one row per group of releases.
_RELEASE_TABLE = (
    # PyTorch 1.2.0 and later. 0.4-1.1 used the retired sagemaker-pytorch repository with its
    # own accounts and are not offered: pass image_uri for them.
    (_PT, "1.2.0 1.3.1", "py2 py3", REGIONS_WITHOUT_ISOF, _PT_REPO),
    (_PT, "1.4.0", "py2 py3 py36", REGIONS_WITHOUT_ISOF, _PT_REPO),
    (_PT, "1.5.0 1.6.0 1.7.1 1.8.0 1.8.1", "py3 py36", REGIONS_WITHOUT_ISOF, _PT_REPO),
    (_PT, "1.9.0 1.9.1 1.10.0 1.10.2 1.11.0 1.12.0 1.12.1", "py38", REGIONS_WITHOUT_ISOF, _PT_REPO),
    (_PT, "1.13.1", "py39", REGIONS_WITHOUT_ISOF, _PT_REPO),
    (_PT, "2.0.0 2.0.1", "py310", REGIONS_WITHOUT_ISOF, _PT_REPO),
    (_PT, "2.1.0 2.2.0", "py310", ALL_REGIONS, _PT_REPO),
    (_PT, "2.3.0", "py311", ALL_REGIONS, _PT_REPO),
    (_PT, "2.4.0 2.5.1", "py311", REGIONS_WITHOUT_ISO, _PT_REPO),
    (_PT, "2.6.0 2.7.1 2.8.0", "py312", REGIONS_WITHOUT_ISO, _PT_REPO),
    # TensorFlow 1.13.1 (py3) and later; older releases used other repositories.
    (_TF, "1.13.1", "py3", REGIONS_WITHOUT_ISOF, _TF_REPO),
    (_TF, "1.14.0 1.15.0 2.0.0 2.0.1 2.0.2 2.1.0 2.1.1", "py2 py3", REGIONS_WITHOUT_ISOF, _TF_REPO),
    (_TF, "1.15.2 1.15.3", "py2 py3 py37", REGIONS_WITHOUT_ISOF, _TF_REPO),
    (_TF, "1.15.4 1.15.5", "py3 py36 py37", REGIONS_WITHOUT_ISOF, _TF_REPO),
    (_TF, "2.0.3 2.0.4 2.1.2 2.1.3", "py3 py36", REGIONS_WITHOUT_ISOF, _TF_REPO),
    (_TF, "2.2.0 2.2.1 2.2.2 2.3.0 2.3.1 2.3.2 2.4.1 2.4.3 2.5.0 2.5.1", "py37",
     REGIONS_WITHOUT_ISOF, _TF_REPO),
    (_TF, "2.6.0 2.6.2 2.6.3 2.7.1", "py38", REGIONS_WITHOUT_ISOF, _TF_REPO),
    (_TF, "2.8.0 2.9.2 2.10.1 2.11.0", "py39", REGIONS_WITHOUT_ISOF, _TF_REPO),
    (_TF, "2.12.0", "py310", REGIONS_WITHOUT_ISO, _TF_REPO),
    (_TF, "2.13.0 2.14.1", "py310", ALL_REGIONS, _TF_REPO),
    (_TF, "2.16.2 2.18.0", "py310", REGIONS_WITHOUT_ISO, _TF_REPO),
    (_TF, "2.19.0", "py312", REGIONS_WITHOUT_ISO, _TF_REPO),
)  # fmt: skip
RELEASES: tuple[ImageRelease, ...] = tuple(
    ImageRelease(framework, version, tuple(py.split()), repository, regions)
    for framework, versions, py, regions, repository in _RELEASE_TABLE
    for version in versions.split()
)

# Version aliases from pytorch.json (major.minor -> release); TensorFlow aliases are the
# latest patch of each major.minor, which _aliases() derives.
_PYTORCH_ALIASES = {
    "1.2": "1.2.0",
    "1.3": "1.3.1",
    "1.4": "1.4.0",
    "1.5": "1.5.0",
    "1.6": "1.6.0",
    "1.7": "1.7.1",
    "1.8": "1.8.1",
    "1.9": "1.9.1",
    "1.10": "1.10.2",
    "1.11": "1.11.0",
    "1.12": "1.12.1",
    "1.13": "1.13.1",
    "2.0": "2.0.1",
    "2.1": "2.1.0",
    "2.2": "2.2.0",
    "2.3": "2.3.0",
    "2.4": "2.4.0",
    "2.5": "2.5.1",
    "2.6": "2.6.0",
    "2.7": "2.7.1",
    "2.8": "2.8.0",
}


def version_key(version: str) -> Version:
    """A sort key for version strings; text that is not a version sorts first."""
    return parse_version(version) or ()


@lru_cache(maxsize=1)
def _index() -> dict[tuple[Framework, str], ImageRelease]:
    index = {(r.framework, r.version): r for r in RELEASES}
    for alias, version in _PYTORCH_ALIASES.items():
        index[(_PT, alias)] = index[(_PT, version)]
    latest: dict[str, ImageRelease] = {}
    for release in RELEASES:
        if release.framework is _TF:
            minor = ".".join(release.version.split(".")[:2])
            current = latest.get(minor)
            if current is None or version_key(release.version) > version_key(current.version):
                latest[minor] = release
    for minor, release in latest.items():
        index.setdefault((_TF, minor), release)
    return index


def find_release(framework: Framework, version: str) -> ImageRelease | None:
    """The training image release for a version as the user typed it (aliases resolved)."""
    return _index().get((framework, version))


def known_versions(framework: Framework) -> list[str]:
    return [r.version for r in RELEASES if r.framework is framework]


def resolved_version(release: ImageRelease | None, version: str) -> Version | None:
    """The numeric version, resolving aliases such as ``2.2`` -> ``2.2.0``.

    ``release`` is ``find_release(framework, version)``, which the caller has already found.
    """
    return parse_version(release.version if release else version)


def metrics_time_series_supported(framework: Framework, version: Version | None) -> bool:
    """SageMaker metrics time series: PyTorch 1.3+ and TensorFlow 1.15+ (SDK estimator.py)."""
    minimum = (1, 3) if framework is _PT else (1, 15)
    return version is not None and version >= minimum


__all__ = [
    "ALL_REGIONS",
    "DLC_ACCOUNTS",
    "HETEROGENEOUS_MIN_VERSION",
    "MWMS_MIN_TENSORFLOW",
    "REGIONS_WITHOUT_ISO",
    "REGIONS_WITHOUT_ISOF",
    "RELEASES",
    "SMDDP_FRAMEWORK_VERSIONS",
    "SMDDP_INSTANCE_TYPES",
    "SMDDP_LISTED_INSTANCE_TYPES",
    "SMP_BOOL_PARAMETERS",
    "SMP_ENUM_PARAMETERS",
    "SMP_POSITIVE_INT_PARAMETERS",
    "TORCH_DISTRIBUTED_GPU_VERSIONS",
    "TORCH_DISTRIBUTED_TRAINIUM_VERSIONS",
    "ImageRelease",
    "Version",
    "find_release",
    "instance_family",
    "is_accelerated",
    "is_gpu",
    "is_trainium",
    "known_versions",
    "metrics_time_series_supported",
    "parse_version",
    "resolved_version",
    "version_key",
    "words",
]
