"""Says which helper it imported, and the function name the runtime gave it."""

import helper


def handler(event, context):
    return {"origin": helper.ORIGIN, "function": context.function_name, "seen": event}
