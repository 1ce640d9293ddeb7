"""The spec file: the SageMaker Python SDK estimator's arguments, as JSON or YAML.

``reader``: text and dicts to a ``TrainingSpec`` with every violation; ``safe_yaml``: a YAML
loader that cannot be made to hang or crash (never shipped in the Lambda package).
"""
