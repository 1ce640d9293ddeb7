"""The CreateTrainingJob API's own limits, read from botocore's service model.

botocore's validator checks only types, required members and minimums, so without these
rules a job name ``bad_name`` or six instance groups would reach the service. Importing the
topic registers its rules, in catalogue order.
"""

from hetero_constructs.checks.rules.api import job_inputs, job_settings

__all__ = ["job_inputs", "job_settings"]
