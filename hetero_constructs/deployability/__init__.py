"""Deployability: what a synthesized template must fit to deploy, checked at synth.

``intrinsics``: CloudFormation's intrinsic functions, one walk for every resolver (this one's and
the local deployment's); ``worst_case``: values CloudFormation resolves only at deploy time,
sized worst-case; ``quota``:
the mechanism (limits, the template as quotas read it, the registry); ``size_quotas`` and
``name_quotas``: the quotas; ``catalogue``: every quota measured on templates, and
``docs/deployability.md`` (no CDK import up to here); ``plugin``: the quotas as a CDK
policy-validation plugin (``enable_deployability_checks``).
"""

from hetero_constructs.jsii_node import use_wheel_node

# Before the plugin imports aws_cdk: jsii reads JSII_NODE when it starts its Node process.
use_wheel_node()


__all__: list[str] = []
