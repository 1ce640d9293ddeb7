"""Rules only the constructs check: they depend on the stack or on how the task is rendered.

The constructs raise them with the other violations (``SpecValidationError``, construct path
included); they are listed here, without importing aws-cdk-lib, for the rule catalogue.
"""

from __future__ import annotations

REGION_RULE = "CDK-REGION"
TIMEOUT_TOKEN_RULE = "CDK-TIMEOUT-TOKEN"
JOB_NAME_RULE = "CDK-JOB-NAME"
BASE_JOB_NAME_RULE = "CDK-BASE-JOB-NAME"
BUILTIN_METRICS_RULE = "CDK-BUILTIN-METRICS"

# (id, what it checks, source), for the catalogue.
CONSTRUCT_RULES = (
    (
        REGION_RULE,
        "A spec's `region`, when given, is its stack's region (a stack whose region is a token "
        "is not checked). Fix: remove `region` from the spec, or deploy the stack to that "
        "region.",
        "this library",
    ),
    (
        TIMEOUT_TOKEN_RULE,
        "A deploy-time `max_run` (`max_wait` with spot), e.g. a CfnParameter, needs a JSONata "
        "task: the wait for the job times out after it plus `completion_margin`, which only a "
        "JSONata `TimeoutSeconds` expression can add; JSONPath's `TimeoutSecondsPath` has no "
        "arithmetic. `HeterogeneousTrainingJob` makes its state machine JSONata by itself. "
        "Fix: `query_language=sfn.QueryLanguage.JSONATA`, or a number.",
        "Step Functions: TimeoutSeconds / TimeoutSecondsPath",
    ),
    (
        JOB_NAME_RULE,
        "A spec has no `job_name`: the state machine starts a job per run, each named from "
        "the job-name prefix and the run, so one fixed name would be refused from the second "
        "run on. Fix: replace `job_name` with `base_job_name` (or the `job_name_prefix` prop).",
        "CreateTrainingJob: TrainingJobName is unique per account and region",
    ),
    (
        BASE_JOB_NAME_RULE,
        "A spec's `base_job_name` becomes the construct's job-name prefix, which scopes IAM and "
        "event routing at synth: 1 to 40 letters, digits and inner hyphens, not a token (a "
        "value the API's job-name rule refuses is reported by that rule alone), and the same "
        "as a `job_name_prefix` prop given too. Fix: a shorter prefix, or give it once.",
        "SDK v2 estimator.py (base_job_name prefixes every job name)",
    ),
    (
        BUILTIN_METRICS_RULE,
        "With `builtin_metrics` (the default), the constructs add a metric definition of "
        "samples per second per instance group and of the data wait per training group (the "
        "lines `MetricsReporter` writes) after the spec's own; together they fit the API's "
        "limit on `MetricDefinitions`. Fix: fewer definitions of your own, or "
        "`builtin_metrics=False`.",
        "botocore SageMaker model: AlgorithmSpecification.MetricDefinitions (max)",
    ),
)


__all__ = [
    "BASE_JOB_NAME_RULE",
    "BUILTIN_METRICS_RULE",
    "CONSTRUCT_RULES",
    "JOB_NAME_RULE",
    "REGION_RULE",
    "TIMEOUT_TOKEN_RULE",
]
