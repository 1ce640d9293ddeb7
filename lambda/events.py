"""The events function's entry point (the function's handler is ``events.handler``)."""

from hetero_constructs.handlers.events import handler

__all__ = ["handler"]
