"""Rules only the constructs check: they depend on the stack or on how the task is rendered.

The constructs raise them with the other violations (``SpecValidationError``, construct path
included); they are registered here, without importing aws-cdk-lib, for the rule catalogue.
"""

from __future__ import annotations

from hetero_constructs.spec.rule_registry import CONSTRUCT, register_rule

REGION_RULE = register_rule(
    "CDK-REGION",
    group=CONSTRUCT,
    title="A spec's `region`, when given, is its stack's region.",
    details="A stack whose region is a token is not checked. Fix: remove `region` from the "
    "spec, or deploy the stack to that region.",
    source="this library",
)
TIMEOUT_TOKEN_RULE = register_rule(
    "CDK-TIMEOUT-TOKEN",
    group=CONSTRUCT,
    title="A deploy-time `max_run` (`max_wait` with spot), e.g. a CfnParameter, needs a "
    "JSONata task.",
    details="The wait for the job times out after it plus `completion_margin`, which only a "
    "JSONata `TimeoutSeconds` expression can add; JSONPath's `TimeoutSecondsPath` has no "
    "arithmetic. `HeterogeneousTrainingJob` makes its state machine JSONata by itself.",
    source="Step Functions: TimeoutSeconds / TimeoutSecondsPath",
    examples=("query_language=sfn.QueryLanguage.JSONATA", '"max_run": 14400'),
)
JOB_NAME_RULE = register_rule(
    "CDK-JOB-NAME",
    group=CONSTRUCT,
    title="A spec has no `job_name`: the state machine starts a job per run.",
    details="Each job is named from the job-name prefix and the run, so one fixed name would "
    "be refused from the second run on.",
    source="CreateTrainingJob: TrainingJobName is unique per account and region",
    examples=('"base_job_name": "resnet"', "job_name_prefix=..."),
)
BASE_JOB_NAME_RULE = register_rule(
    "CDK-BASE-JOB-NAME",
    group=CONSTRUCT,
    title="A spec's `base_job_name` can be the construct's job-name prefix.",
    details="The prefix scopes IAM and event routing at synth: 1 to 40 letters, digits and "
    "inner hyphens, not a token (a value the API's job-name rule refuses is reported by that "
    "rule alone), and the same as a `job_name_prefix` prop given too. Fix: a shorter prefix, "
    "or give it once.",
    source="SDK v2 estimator.py (base_job_name prefixes every job name)",
    examples=('"base_job_name": "resnet"',),
)
DATA_NETWORK_RULE = register_rule(
    "CDK-DATA-NETWORK",
    group=CONSTRUCT,
    severity="warning",
    title="A heterogeneous job on security groups of the user's lets its instances talk.",
    details="The data plane (`hetero_runtime.data`) streams batches from one instance group to "
    "another over the job's VPC, as NCCL and MPI do between the distribution group's hosts. "
    "Where the task creates the security group (a `vpc` without `security_groups`), it allows "
    "all traffic between the job's instances. Where the groups are the user's (`security_groups` "
    "or the spec's `security_group_ids`), the library cannot read their rules: synth shows "
    "this as a CDK warning annotation (it does not block synth).",
    source="SageMaker: Give SageMaker training jobs access to resources in your Amazon VPC "
    "(security groups must allow inbound traffic between the job's instances)",
    examples=(
        "group.add_ingress_rule(group, ec2.Port.all_traffic(), 'between the job instances')",
        "HeterogeneousTrainingTask(..., vpc=vpc)  # the task creates the group",
    ),
)
BUILTIN_METRICS_RULE = register_rule(
    "CDK-BUILTIN-METRICS",
    group=CONSTRUCT,
    title="The spec's metric definitions and the built-in ones fit the API's limit together.",
    details="With `builtin_metrics` (the default), the constructs add a definition of samples "
    "per second per instance group and of the data wait per training group (the lines "
    "`MetricsReporter` writes) after the spec's own. Fix: fewer definitions of your own, or "
    "`builtin_metrics=False`.",
    source="botocore SageMaker model: AlgorithmSpecification.MetricDefinitions (max)",
    examples=("builtin_metrics=False",),
)


__all__ = [
    "BASE_JOB_NAME_RULE",
    "BUILTIN_METRICS_RULE",
    "DATA_NETWORK_RULE",
    "JOB_NAME_RULE",
    "REGION_RULE",
    "TIMEOUT_TOKEN_RULE",
]
