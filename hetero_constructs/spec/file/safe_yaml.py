"""A YAML loader for spec files that cannot be made to hang or crash.

PyYAML's safe loader expands nothing itself (an alias is the same object twice), but whatever
walks the result later does: an alias bomb of a few hundred bytes becomes billions of nodes.
Its composer is also recursive, so deep nesting raises RecursionError. This loader counts, while
composing, the nodes the document expands to (an alias counts as every node it repeats) and the
depth, and stops at ``MAX_YAML_NODES`` and ``MAX_NESTING_DEPTH`` before anything is built. It
also records repeated keys instead of silently keeping the last, and leaves integer literals
too long for any API field unconverted (``OversizedInteger``).

libyaml's parser is used when PyYAML has it (about four times faster than PyYAML's), under
PyYAML's own composer, whose steps can be counted.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.resolver import Resolver

from hetero_constructs.spec.fields import (
    DEPTH_RULE,
    MAX_INTEGER_LITERAL,
    MAX_NESTING_DEPTH,
    KeyedTwice,
    OversizedInteger,
)
from hetero_constructs.spec.file.rules import MAX_YAML_NODES, YAML_SIZE_RULE

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlLimitError(yaml.YAMLError):
    """The document goes beyond a limit of the loader; ``line`` and ``column`` are 1-based."""

    def __init__(self, rule: str, problem: str, allowed: str, mark: Any) -> None:
        super().__init__(problem)
        self.rule = rule
        self.problem = problem
        self.allowed = allowed
        self.line = mark.line + 1
        self.column = mark.column + 1


def _events(text: str) -> Any:
    """A parser of ``text`` into events: libyaml's when PyYAML has it."""
    try:
        return yaml.CSafeLoader(text)
    except AttributeError:  # pragma: no cover - PyYAML built without libyaml
        return yaml.SafeLoader(text)


class _SpecLoader(Composer, SafeConstructor, Resolver):
    """PyYAML's composer and safe constructor, counting what they compose."""

    def __init__(self, text: str) -> None:
        self._parser = _events(text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self._expanded = 0
        # Nodes composed so far, by id, with the number of nodes each expands to. An anchored
        # node without an entry is still being composed: an alias to it is recursive.
        self._sizes: dict[int, int] = {}
        # The composer reads events through these, several calls per node: bound straight to
        # the parser's, without a Python frame in between.
        self.__dict__.update(
            check_event=self._parser.check_event,
            peek_event=self._parser.peek_event,
            get_event=self._parser.get_event,
        )

    def check_event(self, *choices: Any) -> bool:
        return bool(self._parser.check_event(*choices))

    def peek_event(self) -> Any:
        return self._parser.peek_event()

    def get_event(self) -> Any:
        return self._parser.get_event()

    def dispose(self) -> None:
        self._parser.dispose()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None:
                size = self._sizes.get(id(target))
                if size is None:
                    raise YamlLimitError(
                        YAML_SIZE_RULE,
                        f"the alias *{event.anchor} is inside its own anchor (it never ends).",
                        "aliases to anchors that are complete",
                        event.start_mark,
                    )
                self._count(size, event)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_NESTING_DEPTH:
            raise YamlLimitError(
                DEPTH_RULE,
                f"lists and maps are nested more than {MAX_NESTING_DEPTH} levels deep.",
                f"at most {MAX_NESTING_DEPTH} levels of lists and maps",
                event.start_mark,
            )
        before = self._expanded
        self._count(1, event)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._sizes[id(node)] = self._expanded - before
        return node

    def _count(self, nodes: int, event: Any) -> None:
        self._expanded += nodes
        if self._expanded > MAX_YAML_NODES:
            raise YamlLimitError(
                YAML_SIZE_RULE,
                f"the document expands to more than {MAX_YAML_NODES:,} nodes "
                "(each alias counts as the nodes it repeats).",
                f"at most {MAX_YAML_NODES:,} nodes",
                event.start_mark,
            )

    def construct_keyed_map(self, node: MappingNode) -> Any:
        data = KeyedTwice()
        yield data
        repeated = self._repeated_keys(node)  # before merges are flattened into the node
        data.update(self.construct_mapping(node))
        if repeated:
            data.duplicates = tuple(repeated)

    def _repeated_keys(self, node: MappingNode) -> list[tuple[Any, int | None, int | None]]:
        seen: set[Any] = set()
        repeated: list[tuple[Any, int | None, int | None]] = []
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node)
            try:
                if key in seen:
                    mark = key_node.start_mark
                    repeated.append((key, mark.line + 1, mark.column + 1))
                seen.add(key)
            except TypeError:  # unhashable: the constructor reports it
                continue
        return repeated

    def construct_bounded_int(self, node: ScalarNode) -> Any:
        literal = str(self.construct_scalar(node)).replace("_", "").lstrip("+-")
        if len(literal) > MAX_INTEGER_LITERAL:
            return OversizedInteger(len(literal))
        return self.construct_yaml_int(node)


_SpecLoader.yaml_constructors = {
    **SafeConstructor.yaml_constructors,
    "tag:yaml.org,2002:map": _SpecLoader.construct_keyed_map,
    "tag:yaml.org,2002:int": _SpecLoader.construct_bounded_int,
}


def load(text: str) -> Any:
    """The single YAML document in ``text``; raises ``yaml.YAMLError`` (``YamlLimitError``)."""
    loader = _SpecLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


__all__ = [
    "YamlLimitError",
    "load",
]
