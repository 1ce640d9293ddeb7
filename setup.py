"""Package discovery, the one part of the build pyproject.toml cannot say.

Every package under ``hetero_constructs/`` is found by pattern, so new modules ship without a
hand-kept list; ``hetero_constructs.lambda_handlers`` is the ``lambda/`` folder of the Lambda
functions' entry points (mapped by ``package-dir`` in pyproject.toml), which no finder can
discover under that name.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["hetero_constructs", "hetero_constructs.*"]),
        "hetero_constructs.lambda_handlers",
    ]
)
