"""The submit function's entry point (the function's handler is ``submit.handler``)."""

from hetero_constructs.handlers.submit import handler

__all__ = ["handler"]
