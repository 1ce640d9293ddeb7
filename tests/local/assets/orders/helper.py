"""A sibling module: the audit function has its own helper.py."""

ORIGIN = "orders"
