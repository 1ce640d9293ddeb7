"""What SageMaker accepts and offers, read, never copied by hand.

``model``: botocore's SageMaker service model (shapes, bounds, enums, instance types);
``patterns``: the model's Java patterns for Python's ``re``; ``request_validator``: every
constraint a whole request breaks; ``catalog``: facts about frameworks, containers and instance
types the model does not carry, each with its source.
"""

__all__: list[str] = []
