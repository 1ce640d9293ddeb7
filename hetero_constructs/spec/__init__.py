"""The spec: what a user declares, and nothing about AWS beyond its types.

Value objects with the SageMaker Python SDK's names (``training``), their field type checks
(``fields``), the violations every layer reports (``violations``), S3 locations (``s3_uri``),
the ``source_dir`` on disk (``source_tree``), the instance-type fallbacks a run may move to
(``variants``), and the SDK-style spec file (``file``). Imports nothing from the layers above.
"""

__all__: list[str] = []
