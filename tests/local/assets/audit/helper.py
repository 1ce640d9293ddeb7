"""The audit function's helper.py (the orders function has another one)."""

ORIGIN = "audit"
