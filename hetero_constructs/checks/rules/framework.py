"""Framework, image and code rules: which container runs, and which script it runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from hetero_constructs.checks.base import Finding, rule
from hetero_constructs.request.context import RuleContext
from hetero_constructs.service import catalog
from hetero_constructs.spec.source_tree import problems as source_problems

_IMAGES = "SDK v2 image_uri_config/pytorch.json, tensorflow.json"
_GZIP_SUFFIXES = (".tar.gz", ".tgz", ".gz")


@rule(
    "FW-IMAGE-OR-VERSION",
    source="SDK v2 fw_utils.validate_version_or_image_args",
    example='framework_version: "2.3.0", py_version: "py311"  (or image_uri)',
)
def image_or_version(context: RuleContext) -> Iterator[Finding]:
    """The container is named by ``framework_version`` and ``py_version``, or by ``image_uri``."""
    spec = context.spec
    if context.explicit_image_uri is not None:
        return
    missing = [n for n in ("framework_version", "py_version") if getattr(spec, n) is None]
    if missing:
        yield Finding(
            missing[0],
            "No container image can be chosen.",
            None,
            "framework_version and py_version, or image_uri",
            f"set {' and '.join(missing)}, or image_uri",
        )


@rule(
    "FW-VERSION",
    source=_IMAGES,
    example='framework_version: "2.3.0"',
)
def known_version(context: RuleContext) -> Iterator[Finding]:
    """The framework version has a training Deep Learning Container (unless ``image_uri``)."""
    version = context.spec.framework_version
    if context.explicit_image_uri is not None or not context.known(version):
        return
    if context.release is None:
        versions = catalog.known_versions(context.spec.framework)
        yield Finding(
            "framework_version",
            f"There is no {context.spec.framework.value} training container for this version.",
            version,
            ", ".join(versions),
            f"use a listed version (newest: {versions[-1]}), or pass image_uri",
        )


@rule(
    "FW-PY-VERSION",
    source=_IMAGES,
    example='framework_version: "2.8.0", py_version: "py312"',
)
def python_version(context: RuleContext) -> Iterator[Finding]:
    """``py_version`` is one the framework version's container is built for."""
    release = context.release
    py_version = context.spec.py_version
    if context.explicit_image_uri is not None or release is None or not context.known(py_version):
        return
    if py_version not in release.py_versions:
        yield Finding(
            "py_version",
            f"{release.framework.value} {release.version} has no container for this Python.",
            py_version,
            ", ".join(release.py_versions),
            f"set py_version to {release.py_versions[-1]}",
        )


@rule(
    "FW-REGION",
    source=_IMAGES + " (registries per version)",
    example='region: "us-west-2"',
)
def release_region(context: RuleContext) -> Iterator[Finding]:
    """The region is known, and the framework version's container is published there."""
    region = context.region
    if region is None:
        if context.deployment_pending:
            return
        yield Finding(
            "region",
            "The region is not known; it selects the container registry and is passed to the "
            "training toolkit.",
            None,
            "an AWS region such as us-west-2",
            "set region (the constructs take it from the stack)",
        )
        return
    release = context.release
    if not context.known(region) or context.explicit_image_uri is not None or release is None:
        return
    if region not in release.regions:
        yield Finding(
            "region",
            f"{release.framework.value} {release.version} training images are not published in "
            "this region.",
            region,
            f"{len(release.regions)} regions, e.g. " + ", ".join(sorted(release.regions)[:5]),
            "deploy to a listed region, use a newer version, or pass image_uri",
        )


@rule(
    "FW-TRAINIUM-IMAGE",
    source="SDK v2 image_uris.py (Trainium uses pytorch-training-neuron with per-SDK tags)",
    example='image_uri: "<account>.dkr.ecr.<region>.amazonaws.com/pytorch-training-neuronx:<tag>"',
)
def trainium_image(context: RuleContext) -> Iterator[Finding]:
    """Trainium instance types run a Neuron image, which is named with ``image_uri``."""
    if context.explicit_image_uri is not None:
        return
    for index, instance_type in enumerate(context.instance_types):
        if context.known(instance_type) and catalog.is_trainium(instance_type):
            path = (
                f"instance_groups[{index}].instance_type"
                if context.spec.instance_groups
                else "instance_type"
            )
            yield Finding(
                path,
                "Trainium instances need a Neuron Deep Learning Container, whose tags follow the "
                "Neuron SDK release.",
                instance_type,
                "Trainium with image_uri naming a Neuron training image",
                "set image_uri to a pytorch-training-neuronx image",
            )
            return


@rule(
    "FW-ENTRY-POINT",
    source="SDK v2 fw_utils.tar_and_upload_dir, estimator.py (entry point checks)",
    example='entry_point: "train.py", source_dir: "examples/hetero_training"',
)
def entry_point(context: RuleContext) -> Iterator[Finding]:
    """The entry point is a local script: relative to ``source_dir`` when there is one.

    Without ``source_dir`` it is a path to the script, which is shipped alone.
    """
    spec = context.spec
    entry = spec.entry_point
    if not context.known(entry):
        return
    if not entry or entry.startswith("s3://") or (spec.source_dir and os.path.isabs(entry)):
        yield Finding(
            "entry_point",
            "The entry point must be a script path relative to source_dir.",
            entry,
            "a relative path such as train.py",
            "put the script in source_dir and give its relative path",
        )
        return
    source_dir = spec.source_dir
    if not source_dir or not context.known(source_dir) or source_dir.startswith("s3://"):
        return
    if context.is_dir(source_dir) and not context.holds_file(source_dir, entry):
        yield Finding(
            "entry_point",
            "The entry point is not in source_dir.",
            entry,
            f"a file under {source_dir}",
            "fix the path, or add the script to source_dir",
        )


@rule(
    "FW-SOURCE-DIR",
    source="Training toolkit files.py download_and_extract (S3 object opened as tar mode r:gz); "
    "SDK v2 fw_utils.tar_and_upload_dir (symbolic links followed)",
    example='source_dir: "examples/hetero_training"  (or s3://bucket/code/sourcedir.tar.gz)',
)
def source_dir(context: RuleContext) -> Iterator[Finding]:
    """``source_dir`` is an existing local directory that can be packaged, or an S3 gzip tar.

    Everything in a local directory is a regular file, a directory or a symbolic link to one:
    no dangling link, no link loop, no link to a directory that contains it, no FIFO, socket or
    device (the packaging never opens those: reading a FIFO would block the synth).
    """
    value = context.spec.source_dir
    if value is None or not context.known(value):
        return
    if value.startswith("s3://"):
        if not value.endswith(_GZIP_SUFFIXES):
            yield Finding(
                "source_dir",
                "The toolkit downloads one S3 object and opens it as a gzip tar; a prefix or "
                "another format fails in the container.",
                value,
                "an s3:// URI of a gzip tar object (.tar.gz, .tgz or .gz)",
                "package the code as sourcedir.tar.gz and point at that object",
            )
    elif not context.is_dir(value):
        yield Finding(
            "source_dir",
            "The source directory does not exist."
            if not os.path.lexists(value)
            else "source_dir is not a directory.",
            value,
            "an existing local directory",
            "fix the path (a spec file's relative paths start at the file's folder)",
        )
    else:
        yield from source_tree_findings(value, root_info=context.stat(value))


# Problems of one source directory reported one by one, then counted.
_LISTED_SOURCE_PROBLEMS = 10


def source_tree_findings(
    root: str | Path, path: str = "source_dir", root_info: os.stat_result | None = None
) -> Iterator[Finding]:
    """What in the directory ``root`` cannot be packaged (shared with the packaging).

    ``root_info``: the stat of ``root`` already taken in this validation (see ``problems``).
    """
    problems = source_problems(root, root_info)
    if not problems:
        return
    root = Path(root)  # named as pathlib writes it
    for problem in problems[:_LISTED_SOURCE_PROBLEMS]:
        yield Finding(
            path,
            f"'{problem.relative}' in {root} is {problem.what}; it cannot be packaged.",
            problem.relative,
            "regular files, directories and symbolic links to them",
            "remove it from the source directory, or point the link at a file",
        )
    if len(problems) > _LISTED_SOURCE_PROBLEMS:
        more = len(problems) - _LISTED_SOURCE_PROBLEMS
        yield Finding(
            path,
            f"... and {more} more entries of {root} that cannot be packaged.",
            more,
            "regular files, directories and symbolic links to them",
            "clean up the source directory",
        )


__all__ = [
    "entry_point",
    "image_or_version",
    "known_version",
    "python_version",
    "release_region",
    "source_dir",
    "source_tree_findings",
    "trainium_image",
]
