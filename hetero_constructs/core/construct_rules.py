"""Rules only the constructs check: they depend on the stack or on how the task is rendered.

The constructs raise them with the other violations (``SpecValidationError``, construct path
included); they are listed here, without importing aws-cdk-lib, for the rule catalogue.
"""

from __future__ import annotations

REGION_RULE = "CDK-REGION"
TIMEOUT_TOKEN_RULE = "CDK-TIMEOUT-TOKEN"

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
)
