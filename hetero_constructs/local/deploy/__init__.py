"""Deploying a synthesized template into moto: CloudFormation semantics (``resolve``) and the
creation of each resource in dependency order (``create``)."""

__all__: list[str] = []
