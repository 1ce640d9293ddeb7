"""The public API is explicit: what users write is at the top level, every module says what it
exports, and no exported name clashes with aws-cdk-lib's."""

from __future__ import annotations

import ast
from pathlib import Path

import hetero_constructs

ROOT = Path(__file__).resolve().parents[1]
# What users write: the constructs, the spec's value objects, one spec reader, one planning
# entry point (and the violations alone), the errors, the snapshot-test helper, the dashboard, the
# training-script helper (its metric lines too), and the runs API.
USER_NAMES = {
    "HeterogeneousTrainingJob",
    "HeterogeneousTrainingTask",
    "HeterogeneousTrainingProps",
    "HeterogeneousTrainingTaskProps",
    "HeterogeneousTrainingJobProps",
    "TrainingRunner",
    "TrainingDashboard",
    "CapacityRetry",
    "enable_deployability_checks",
    "bucket_uri",
    "TrainingSpec",
    "InstanceGroup",
    "InstanceFallback",
    "TrainingChannel",
    "DistributedTraining",
    "Launcher",
    "LauncherConfig",
    "SmddpCollective",
    "Framework",
    "TrainingMetric",
    "load_spec_file",
    "plan",
    "validate",
    "Plan",
    "SpecValidationError",
    "Violation",
    "TrainingErrors",
    "normalized_template",
    "HostRole",
    "TrainingEnvironment",
    "TrainingEnvironmentError",
    "MetricsReporter",
    "TrainingRun",
    "RunStatus",
    "RunInputError",
}


def test_the_top_level_exports_what_users_write() -> None:
    assert set(hetero_constructs.__all__) == USER_NAMES


def test_no_top_level_name_is_also_an_aws_cdk_lib_name() -> None:
    import importlib

    # aws-cdk-lib's root and the modules an app that trains imports alongside this library.
    modules = ["aws_cdk"] + [
        f"aws_cdk.aws_{name}"
        for name in [
            "apigateway",
            "cloudwatch",
            "dynamodb",
            "ec2",
            "ecr",
            "events",
            "iam",
            "kms",
            "lambda",
            "logs",
            "s3",
            "s3_assets",
            "sagemaker",
            "sns",
            "sqs",
            "stepfunctions",
            "stepfunctions_tasks",
        ]
    ]
    cdk_names = {name for module in modules for name in dir(importlib.import_module(module))}
    assert USER_NAMES & cdk_names == set()


def test_every_module_declares_what_it_exports() -> None:
    missing, unknown = [], []
    for path in sorted((ROOT / "hetero_constructs").rglob("*.py")):
        if "__pycache__" in path.parts or path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared: list[str] | None = None
        bound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id == "__all__":
                        literal = isinstance(node.value, ast.List | ast.Tuple)
                        declared = list(ast.literal_eval(node.value)) if literal else []
                    bound.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                bound.add(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        relative = path.relative_to(ROOT).as_posix()
        if declared is None:
            missing.append(relative)
        elif path != ROOT / "hetero_constructs" / "__init__.py":  # names made on first use
            unknown += [f"{relative}: {name}" for name in declared if name not in bound]
    assert missing == []
    assert unknown == []
