"""The rules, one module (or package) per topic; the topic is its name below this package.

- ``launchers``: which launcher runs where, on which framework, version and instance type
- ``collectives``: SMDDP AllReduce / AllGather
- ``cluster``: heterogeneous-cluster groups, the distribution group, channel scoping
- ``framework``: container image and training code
- ``api``: the CreateTrainingJob API's own limits, from botocore's model
- ``values``: what the model's patterns let through: S3 bucket names, 32-bit integers
- ``runs``: what a training run adds to the request (its marker tags)
- ``acknowledgments``: warnings acknowledged with a reason (errors cannot be)
"""

__all__: list[str] = []
