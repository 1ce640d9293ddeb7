"""Errors the local account answers where moto has no class for them (``TaskDoesNotExist``,
``TaskTimedOut``, ``ExecutionNotRedrivable``), serialized as moto serializes its own.

moto's ``ServiceException`` (in every supported release) carries the AWS error code as
``code``; its responses turn one raised by a backend into the service's error response, the
HTTP status taken from the service model. (moto 5.2.5 also had ``AWSError``, which 5.2.6
removed.)
"""

from __future__ import annotations

import functools


@functools.cache
def error_class(code: str) -> type[Exception]:
    """The exception class of the service error ``code`` (one class per code)."""
    from moto.core.exceptions import ServiceException

    return type(code, (ServiceException,), {"code": code, "__module__": __name__})


def service_error(code: str, message: str) -> Exception:
    """The service error ``code`` with ``message``, to raise from a moto backend."""
    return error_class(code)(message)


__all__ = ["error_class", "service_error"]
