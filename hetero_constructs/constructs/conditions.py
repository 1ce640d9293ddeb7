"""IAM condition keys that narrow CreateTrainingJob to what a spec declares.

The service documents these keys for ``sagemaker:CreateTrainingJob``; with them, an execution
input cannot make the submit Lambda create a job wider than its spec (another instance type, a
longer runtime, another network or key), even if the Lambda's own checks were bypassed.
"""

from __future__ import annotations

from typing import Any

from hetero_constructs.contract import lifecycle


def instance_types(request: dict[str, Any]) -> list[str]:
    resources = request["ResourceConfig"]
    types = {g["InstanceType"] for g in resources.get("InstanceGroups", [])}
    if "InstanceType" in resources:
        types.add(resources["InstanceType"])
    return sorted(types)


def create_training_job(
    request: dict[str, Any], *, types: list[str] | None = None, runner_id: str | None = None
) -> dict[str, dict[str, Any]]:
    """The conditions on CreateTrainingJob for the request (and its fallback ``types``)."""
    conditions: dict[str, dict[str, Any]] = {
        "ForAllValues:StringEquals": {"sagemaker:InstanceTypes": types or instance_types(request)},
        "NumericLessThanEquals": {
            "sagemaker:MaxRuntimeInSeconds": request["StoppingCondition"]["MaxRuntimeInSeconds"]
        },
    }
    vpc = request.get("VpcConfig")
    if vpc:
        conditions["ForAllValues:StringEquals"].update(
            {
                "sagemaker:VpcSubnets": vpc["Subnets"],
                "sagemaker:VpcSecurityGroupIds": vpc["SecurityGroupIds"],
            }
        )
        conditions["Null"] = {"sagemaker:VpcSubnets": "false"}
    resources = request["ResourceConfig"]
    keys = {
        "sagemaker:VolumeKmsKey": resources.get("VolumeKmsKeyId"),
        "sagemaker:OutputKmsKey": request["OutputDataConfig"].get("KmsKeyId"),
    }
    arns = {name: value for name, value in keys.items() if value}
    if arns:
        conditions["ArnEquals"] = arns
    flags = {
        "sagemaker:NetworkIsolation": request.get("EnableNetworkIsolation"),
        "sagemaker:InterContainerTrafficEncryption": request.get(
            "EnableInterContainerTrafficEncryption"
        ),
    }
    required = {name: "true" for name, value in flags.items() if value}
    if required:
        conditions["Bool"] = required
    keep_alive = resources.get("KeepAlivePeriodInSeconds")
    if keep_alive is not None:
        conditions["NumericLessThanEquals"]["sagemaker:KeepAlivePeriod"] = keep_alive
    if runner_id is not None:
        # Every job carries its runner's tag: the event rule routes its end by it.
        conditions["StringEquals"] = {f"aws:RequestTag/{lifecycle.TAG_RUNNER}": runner_id}
    return conditions


__all__ = [
    "create_training_job",
    "instance_types",
]
