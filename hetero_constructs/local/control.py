"""The served account's control channel: its own requests on its own port, beside moto's.

moto's server answers AWS requests and its own ``/moto-api/``; a served account also answers
``/_hetero-api/v1/COMMAND`` (a path no AWS request takes: ``_hetero-api`` is no valid bucket
name), with JSON in and out, so ``hetero-train local deploy / script / interrupt`` (and
``steering.ServedAccount``) steer the account the command line already knows the endpoint of.

Only 127.0.0.1 is served, and a control request must come from a program on this machine, not a
web page: one with an ``Origin`` header (every browser's cross-site request has one), with a
``Host`` other than 127.0.0.1 or localhost (DNS rebinding), or a body that is not
``application/json`` is refused with 403.

``ControlServer`` serves moto's WSGI application as moto's ``ThreadedMotoServer`` does (its
request handler, a thread per request), with this channel in front; it binds at once, so a
port in use raises ``OSError`` in the caller.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

#: Where the control channel's commands are.
CONTROL_PREFIX = "/_hetero-api/v1/"
#: Every answer's ``service``: a served account answered (not moto, nor another service).
SERVICE = "hetero-constructs local account"

#: A command: the request's JSON body (None for GET) -> the answer's JSON body.
Command = Callable[[Any], dict[str, Any]]

_LOG = logging.getLogger(__name__)
_LOCAL_HOSTS = ("127.0.0.1", "localhost")


class ControlError(Exception):
    """A command refused: ``name`` (e.g. ``NotRunning``), the message, the HTTP status."""

    def __init__(self, name: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.name = name
        self.status = status


class ControlApp:
    """A WSGI application: control requests to ``commands`` (by ``METHOD name``), every other
    request to ``moto``."""

    def __init__(self, moto: Any, commands: dict[str, Command]) -> None:
        self.moto = moto
        self.commands = commands

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO") or "")
        if not path.startswith("/_hetero-api/"):
            return self.moto(environ, start_response)  # type: ignore[no-any-return]
        method = str(environ.get("REQUEST_METHOD") or "GET")
        try:
            refused = _not_local(environ)
            if refused:
                raise ControlError("Forbidden", refused, 403)
            command = self.commands.get(f"{method} {path.removeprefix(CONTROL_PREFIX)}")
            if command is None:
                known = ", ".join(sorted(self.commands))
                raise ControlError(
                    "UnknownCommand", f"no control command {method} {path}; known: {known}", 404
                )
            status, answer = 200, command(_body(environ) if method != "GET" else None)
        except ControlError as error:
            status, answer = error.status, {"error": error.name, "message": str(error)}
        except Exception as error:  # a bug of ours: said to the caller, logged here
            _LOG.exception("control command %s %s failed", method, path)
            status, answer = 500, {"error": type(error).__name__, "message": str(error)}
        body = json.dumps({"service": SERVICE, **answer}).encode()
        start_response(
            f"{status} {'OK' if status == 200 else 'Error'}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        )
        return [body]


def _not_local(environ: dict[str, Any]) -> str | None:
    """Why the request may come from a web page rather than a program here, or None."""
    if environ.get("HTTP_ORIGIN"):
        return "control requests are taken from programs on this machine, not web pages"
    host = str(environ.get("HTTP_HOST") or "").rsplit(":", 1)[0]
    if host not in _LOCAL_HOSTS:
        return f"control requests are taken for 127.0.0.1 or localhost only, not {host!r}"
    if environ.get("REQUEST_METHOD") not in ("GET", "DELETE"):
        kind = str(environ.get("CONTENT_TYPE") or "").split(";")[0].strip()
        if kind != "application/json":
            return f"a control request's body is application/json, not {kind or 'none'!r}"
    return None


def _body(environ: dict[str, Any]) -> Any:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    raw = environ["wsgi.input"].read(length) if length > 0 else b""
    try:
        return json.loads(raw) if raw else {}
    except ValueError as error:
        raise ControlError("InvalidRequest", f"the request's body is not JSON ({error})") from None


class ControlServer:
    """moto's server app with the control channel, on 127.0.0.1:``port`` (0: a free one)."""

    def __init__(self, port: int, commands: dict[str, Command]) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server

        app = ControlApp(DomainDispatcherApplication(create_backend_app), commands)
        # Bound here: a port in use is the caller's OSError (werkzeug would print it and exit).
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listening:
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listening.bind(("127.0.0.1", port))
            listening.listen(128)
            self._server = make_server(
                "127.0.0.1",
                port,
                app,
                threaded=True,
                request_handler=MotoRequestHandler,
                fd=listening.fileno(),  # werkzeug serves a duplicate of it
            )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="local-account-server", daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def start(self) -> None:
        """Serve requests, from a thread of its own."""
        self._thread.start()

    def stop(self) -> None:
        """Serve no more, and close the port."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()


__all__ = ["CONTROL_PREFIX", "SERVICE", "Command", "ControlApp", "ControlError", "ControlServer"]
