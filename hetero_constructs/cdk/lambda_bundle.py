"""The Lambda package: the handlers, the core they validate with, and the SageMaker model."""

from __future__ import annotations

from pathlib import Path

import botocore

from hetero_constructs.cdk.packaging import staged_directory
from hetero_constructs.handlers import lambda_source

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
DATA_PATH = "botocore_data"


def lambda_package() -> Path:
    """The handlers, the core they validate with, and the SageMaker model the core reads.

    The botocore model file is the one this synth validated against; ``AWS_DATA_PATH`` makes the
    Lambda's botocore load it instead of whatever version the runtime ships.
    """
    model_dir = Path(botocore.__file__).parent / "data" / "sagemaker"
    versions = sorted(p for p in model_dir.iterdir() if p.is_dir())
    model = next(versions[-1].glob("service-2.json*"))
    sources = {
        **{path.name: path for path in sorted(lambda_source().glob("*.py"))},
        "hetero_constructs/__init__.py": PACKAGE_ROOT / "__init__.py",
        "hetero_constructs/core": PACKAGE_ROOT / "core",
        f"{DATA_PATH}/sagemaker/{versions[-1].name}/{model.name}": model,
    }
    return staged_directory(sources, "lambda")
