"""Always fails: its asynchronous invocations end in its on-failure destination."""


class Flaky(Exception):
    pass


def handler(event, context):
    raise Flaky(f"cannot handle {event.get('detail-type')}")
