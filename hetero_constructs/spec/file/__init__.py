"""The spec file: the SageMaker Python SDK estimator's arguments, as JSON or YAML.

``rules``: the file's own rules and limits; ``text``: text to data, every limit enforced while
reading (``safe_yaml``: a YAML loader that cannot be made to hang or crash, never shipped in
the Lambda package); ``walk``: the walk that collects every problem; ``reader`` (with
``distribution`` for the SDK's ``distribution`` dict): data to a ``TrainingSpec`` with every
violation; ``writer``: a spec back to a spec-file mapping.
"""

__all__: list[str] = []
