"""Deployability: what a synthesized template must fit to deploy, checked at synth.

``worst_case``: values CloudFormation resolves only at deploy time, sized worst-case; ``quota``:
the AWS quotas measured on a template (no CDK import); ``plugin``: the quotas as a CDK
policy-validation plugin (``enable_deployability_checks``).
"""
