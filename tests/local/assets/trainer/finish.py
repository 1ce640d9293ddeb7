"""Reports a job's end from its "SageMaker Training Job State Change" event."""

import jobs


def handler(event, context):
    detail = event["detail"]
    if detail["TrainingJobStatus"] not in jobs.TERMINAL:
        return "not terminal"
    return "reported" if jobs.report(detail) else "nobody waits"
