"""What SageMaker accepts and offers, read, never copied by hand.

``model``: botocore's SageMaker service model (enums, limits, patterns, the whole-request
validator); ``catalog``: facts about frameworks, containers and instance types the model does not
carry, each with its source.
"""
