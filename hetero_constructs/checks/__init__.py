"""Every check of a spec: the rule mechanism, the rules by topic, and their registry.

``base``: a rule is a small pure function with an id, a doc and a source; ``helpers``: pieces
several rules share; ``rules``: the rules, one module or package per topic; ``registry``: every
rule in catalogue order and the run of them on a spec; ``construct_rules``: the ids only the
constructs check; ``docs``: the catalogue (``docs/rules.md``) generated from the rules.
"""

__all__: list[str] = []
