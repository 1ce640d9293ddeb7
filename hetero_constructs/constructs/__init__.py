"""The CDK constructs over the pure-Python layers. Importing any of them imports aws_cdk.

``props``: the props of the task and the job, declared once; ``task``:
``HeterogeneousTrainingTask``, the chainable task; ``job``: ``HeterogeneousTrainingJob``, the
task in a state machine of its own; ``runner``: ``TrainingRunner``, what every task of a stack
shares (Lambdas, run table, rules, alarms).
The rest serves them: IAM (``permissions``, ``conditions``), cdk-nag acknowledgments (``nag``),
deterministic assets (``packaging``, ``lambda_bundle``), tokens (``tokens``), template hygiene
(``hygiene``) and snapshot-friendly templates (``testing``).
"""

from hetero_constructs.jsii_node import use_wheel_node

# Before aws_cdk is imported: jsii reads JSII_NODE when it starts its Node process.
use_wheel_node()

# Violations at `cdk synth` print as the list they are, not after a traceback (errors.py).
from hetero_constructs.constructs.errors import report_violations_without_traceback  # noqa: E402

report_violations_without_traceback()


__all__: list[str] = []
