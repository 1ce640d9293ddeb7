"""The layout shows the flow: each layer imports only from the layers below it, no module
imports itself back through others, and no module outgrows 500 lines.

Every import counts: at module level, inside functions (imported on first use) and for type
checking only. ``LAYERS`` below is the one declaration of the layer order (docs/design.md: Layout).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "hetero_constructs"
# Bottom first. A module belongs to the layer of its longest matching prefix; it may import
# from its own layer and those before it, never from one after it.
LAYERS = (
    "hetero_constructs.runtime",  # the training-script helper: standard library only
    "hetero_constructs.jsii_node",  # which Node runs jsii: standard library only
    "hetero_constructs.spec",  # what a user declares: value objects, field checks, spec files
    "hetero_constructs.service",  # what SageMaker accepts: botocore's model, the catalogue
    "hetero_constructs.contract",  # the run contract: lifecycle, job names, execution overrides
    "hetero_constructs.request",  # the CreateTrainingJob request of a spec where it deploys
    "hetero_constructs.checks",  # the rules and their registry
    "hetero_constructs.planning",  # validate and build in one step
    "hetero_constructs.handlers",  # the Lambda functions' logic: submit, lifecycle events
    "lambda",  # the functions' entry points (the top-level lambda/ folder)
    "hetero_constructs.deployability",  # AWS quotas a template must fit, and the synth plugin
    "hetero_constructs.constructs",  # the CDK constructs
    "hetero_constructs.runs",  # training runs read and steered through AWS: the Python API
    "hetero_constructs.local",  # local runs of synthesized templates (a library)
    "hetero_constructs.cli",  # hetero-train, the only command line
    "hetero_constructs",  # the package itself: the public names, imported on first use
)
MAX_LINES = 500


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    paths = [*sorted((ROOT / PACKAGE).rglob("*.py")), *sorted((ROOT / "lambda").glob("*.py"))]
    return {_module_name(path): path for path in paths if "__pycache__" not in path.parts}


MODULES = _modules()


def _imported(module: str, path: Path) -> Iterator[str]:
    """The library modules ``module`` imports, wherever the import statement is."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from package import module`` imports the module; ``from module import name``
            # the module.
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name in MODULES:
                yield name


GRAPH = {module: sorted(set(_imported(module, path))) for module, path in MODULES.items()}


def layer_of(module: str) -> int:
    matches = [
        index
        for index, layer in enumerate(LAYERS)
        if module == layer or module.startswith(f"{layer}.")
    ]
    return max(matches, key=lambda index: len(LAYERS[index]))


def test_every_module_is_in_a_layer_and_imports_only_from_below() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)]}) imports {other} ({LAYERS[layer_of(other)]})"
        for module, imports in GRAPH.items()
        for other in imports
        if layer_of(other) > layer_of(module)
    ]
    assert upward == []


def test_no_module_imports_itself_back_through_others() -> None:
    """No import cycle between modules (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in GRAPH[module]:
            if other not in index:
                visit(other)
                lowest[module] = min(lowest[module], lowest[other])
            elif other in on_stack:
                lowest[module] = min(lowest[module], index[other])
        if lowest[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1 or module in GRAPH[module]:
                cycles.append(sorted(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_training_script_helper_imports_nothing_of_the_library() -> None:
    runtime = [m for m in GRAPH if layer_of(m) == 0]
    assert runtime
    assert all(layer_of(other) == 0 for m in runtime for other in GRAPH[m])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_500_lines(module: str) -> None:
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module}: {lines} lines; split it along the jobs it holds"


def test_the_check_sees_the_imports_it_must() -> None:
    """The graph is not empty by accident: known edges of each kind are in it."""
    assert "hetero_constructs.spec.violations" in GRAPH["hetero_constructs.spec.fields"]
    assert "hetero_constructs.local.run" in GRAPH["hetero_constructs.cli.local_run"]
    # Inside a function (imported on first use).
    assert "hetero_constructs.spec.file.safe_yaml" in GRAPH["hetero_constructs.spec.file.text"]
    # ``from package import module`` (a handler's sibling), and the library it validates with.
    assert "hetero_constructs.handlers.outcome" in GRAPH["hetero_constructs.handlers.submit"]
    assert "hetero_constructs.planning" in GRAPH["hetero_constructs.handlers.attempt"]
    # An entry point of lambda/ imports its handler.
    assert "hetero_constructs.handlers.submit" in GRAPH["lambda.submit"]
    assert layer_of("hetero_constructs.checks.rules.api.job_inputs") == LAYERS.index(
        "hetero_constructs.checks"
    )


def test_no_test_module_imports_another() -> None:
    """Shared builders live in tests/fixtures; a test module imports none of its peers."""
    imports = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            imports += [
                f"{path.relative_to(ROOT)}: {name}"
                for name in names
                if name.startswith("tests.") and name.rpartition(".")[2].startswith("test_")
            ]
    assert imports == []
