"""CloudFormation's intrinsic functions: one walk of a template's values, for every resolver.

``Intrinsics`` replaces each intrinsic function in a value by what it resolves to. The
functions whose result follows from their arguments (``Fn::Join``, ``Fn::Sub``, ``Fn::Split``,
``Fn::Select``, ``Fn::FindInMap``, ``Fn::Base64``, ``Fn::ToJsonString``, ``Fn::Length``) and
``AWS::NoValue`` are resolved here, the same for every resolver. What a ``Ref`` and a
``Fn::GetAtt`` are, how ``Fn::If`` and ``Fn::GetAZs`` decide, and what an unknown function or a
malformed argument gives, is the resolver's own:

- ``worst_case.WorstCase``: values at least as long as anything they can deploy to, to size a
  template before it deploys;
- ``local.deploy.resolve.Resolver``: the literal values of a local deployment in moto.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class _NoValue:
    """``AWS::NoValue``: the property or list item is removed."""


NO_VALUE = _NoValue()


def is_intrinsic(node: Any) -> bool:
    """A one-key mapping whose key is ``Ref`` or ``Fn::...``."""
    if not isinstance(node, dict) or len(node) != 1:
        return False
    (key,) = node
    return key == "Ref" or (isinstance(key, str) and key.startswith("Fn::"))


def scalar_text(value: Any) -> str:
    """A resolved value as ``Fn::Join`` and ``Fn::Sub`` write it (maps and lists as JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int | float) else json.dumps(value)


class Intrinsics:
    """Resolves the intrinsic functions of one template's values (see the module docstring).

    ``value(node)`` is the node with every function replaced (strings, lists and maps; an
    ``AWS::NoValue`` item or property removed); ``text(node)`` the string it deploys to.
    A resolver answers ``ref``, ``get_att``, ``fn_if``, ``fn_get_azs``, ``unknown`` and
    ``malformed``, and may add functions of its own to ``functions``.
    """

    def __init__(self, template: Mapping[str, Any]) -> None:
        self.template = template
        self.resources: Mapping[str, Any] = template.get("Resources") or {}
        self.parameters: Mapping[str, Any] = template.get("Parameters") or {}
        self.mappings: Mapping[str, Any] = template.get("Mappings") or {}
        self.functions: dict[str, Callable[[Any], Any]] = {
            "Ref": self.fn_ref,
            "Fn::GetAtt": self.fn_get_att,
            "Fn::Join": self.fn_join,
            "Fn::Sub": self.fn_sub,
            "Fn::FindInMap": self.fn_find_in_map,
            "Fn::Select": self.fn_select,
            "Fn::If": self.fn_if,
            "Fn::Split": self.fn_split,
            "Fn::GetAZs": self.fn_get_azs,
            "Fn::Base64": self.fn_base64,
            "Fn::ToJsonString": self.fn_to_json_string,
            "Fn::Length": self.fn_length,
        }

    # -- the walk ----------------------------------------------------------------------------

    def value(self, node: Any) -> Any:
        """The node with every intrinsic function replaced by what it resolves to."""
        if node.__class__ is str:  # most nodes: answered before the tests below
            return node
        if isinstance(node, dict):
            if len(node) == 1:
                ((name, argument),) = node.items()
                function = self.functions.get(name)
                if function is not None:
                    return function(argument)
                if name == "Ref" or (isinstance(name, str) and name.startswith("Fn::")):
                    return self.unknown(name, argument)
            result = {key: self.value(item) for key, item in node.items()}
            return {key: item for key, item in result.items() if item is not NO_VALUE}
        if isinstance(node, list):
            items = [self.value(item) for item in node]
            return [item for item in items if item is not NO_VALUE]
        return node

    def text(self, node: Any) -> str:
        """The node as the string it deploys to (maps and lists as compact JSON)."""
        resolved = self.value(node)
        if resolved is NO_VALUE or resolved is None:
            return ""
        if isinstance(resolved, str):
            return resolved
        if isinstance(resolved, bool):
            return "true" if resolved else "false"
        if isinstance(resolved, int | float):
            return str(resolved)
        return json.dumps(resolved, separators=(",", ":"), ensure_ascii=False)

    def exact(self, node: Any) -> str | None:
        """The node's text where it is known exactly (a resolver of estimates says ``None``)."""
        return self.text(node)

    def items(self, node: Any) -> list[Any]:
        """A list argument, literal or produced by an intrinsic."""
        resolved = self.value(node)
        if isinstance(resolved, list):
            return resolved
        return [] if resolved is NO_VALUE else [resolved]

    # -- what each resolver answers ----------------------------------------------------------

    def ref(self, name: str) -> Any:
        """``Ref``: a pseudo parameter, a template parameter or a resource."""
        raise NotImplementedError

    def get_att(self, logical_id: str, attribute: str) -> Any:
        """``Fn::GetAtt`` of a resource."""
        raise NotImplementedError

    def fn_if(self, argument: Any) -> Any:
        raise NotImplementedError

    def fn_get_azs(self, argument: Any) -> Any:
        raise NotImplementedError

    def unknown(self, name: str, argument: Any) -> Any:
        """A function (``Fn::...``) this resolver does not know."""
        raise NotImplementedError

    def malformed(self, name: str, argument: Any) -> Any:
        """A function whose argument does not have the form CloudFormation documents."""
        raise NotImplementedError

    # -- the functions -----------------------------------------------------------------------

    def fn_ref(self, argument: Any) -> Any:
        if not isinstance(argument, str):
            return self.malformed("Ref", argument)
        if argument == "AWS::NoValue":
            return NO_VALUE
        return self.ref(argument)

    def fn_get_att(self, argument: Any) -> Any:
        attribute: str | None
        if isinstance(argument, str):
            logical_id, _, attribute = argument.partition(".")
        elif isinstance(argument, list) and len(argument) == 2 and isinstance(argument[0], str):
            logical_id, attribute = argument[0], self.exact(argument[1])
        else:
            return self.malformed("Fn::GetAtt", argument)
        if attribute is None:
            return self.malformed("Fn::GetAtt", argument)
        return self.get_att(logical_id, attribute)

    def fn_join(self, argument: Any) -> Any:
        if not isinstance(argument, list) or len(argument) != 2:
            return self.malformed("Fn::Join", argument)
        separator, parts = argument
        return str(separator).join(scalar_text(part) for part in self.items(parts))

    def fn_sub(self, argument: Any) -> Any:
        variables: Mapping[str, Any]
        if isinstance(argument, str):
            text, variables = argument, {}
        elif isinstance(argument, list) and len(argument) == 2:
            text, variables = argument[0], argument[1] or {}
        else:
            return self.malformed("Fn::Sub", argument)
        if not isinstance(text, str) or not isinstance(variables, Mapping):
            return self.malformed("Fn::Sub", argument)

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return scalar_text(self.value(variables[name]))
            if "." in name:
                return scalar_text(self.fn_get_att(name))
            return scalar_text(self.fn_ref(name))

        return _SUB_VARIABLE.sub(substitute, text)

    def fn_select(self, argument: Any) -> Any:
        if not isinstance(argument, list) or len(argument) != 2:
            return self.malformed("Fn::Select", argument)
        index, items = self.exact(argument[0]), self.items(argument[1])
        if index is None or not index.isdigit() or int(index) >= len(items):
            return self.malformed("Fn::Select", argument)
        return items[int(index)]

    def fn_find_in_map(self, argument: Any) -> Any:
        if not isinstance(argument, list) or len(argument) < 3:
            return self.malformed("Fn::FindInMap", argument)
        name, top, second = (self.exact(part) for part in argument[:3])
        entries = self.mappings.get(name or "", {}).get(top or "", {})
        if isinstance(entries, dict) and second in entries:
            return entries[second]
        default = argument[3] if len(argument) > 3 else None
        if isinstance(default, dict) and "DefaultValue" in default:
            return self.value(default["DefaultValue"])
        return self.malformed("Fn::FindInMap", argument)

    def fn_split(self, argument: Any) -> Any:
        if not isinstance(argument, list) or len(argument) != 2:
            return [self.malformed("Fn::Split", argument)]
        return self.text(argument[1]).split(str(argument[0]))

    def fn_base64(self, argument: Any) -> Any:
        return base64.b64encode(self.text(argument).encode()).decode()

    def fn_to_json_string(self, argument: Any) -> Any:
        return json.dumps(self.value(argument), separators=(",", ":"), ensure_ascii=False)

    def fn_length(self, argument: Any) -> Any:
        return len(self.items(argument))


__all__ = [
    "NO_VALUE",
    "Intrinsics",
    "is_intrinsic",
    "scalar_text",
]
