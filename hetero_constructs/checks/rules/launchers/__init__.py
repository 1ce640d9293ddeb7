"""Launcher rules: which launcher runs where, on which framework, version and instance type.

Importing the topic registers its rules, in catalogue order.
"""

from hetero_constructs.checks.rules.launchers import distribution, specialised

__all__ = ["distribution", "specialised"]
