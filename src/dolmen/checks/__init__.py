"""``dolmen.checks``: one package per category, one module per concern; the registry.

Importing ``load_registry()`` imports every check module under the category
packages, whose ``@check`` decorators fill ``REGISTRY``.
"""

from __future__ import annotations

import importlib
import pkgutil

from dolmen.checks.model import REGISTRY, CheckSpec

CATEGORIES = (
    "system",
    "stack",
    "gpu",
    "interconnect",
    "storage",
    "tuning",
    "security",
    "baseline",
    "workload",
)


def load_registry() -> dict[str, CheckSpec]:
    """Every registered check, by id."""
    for category in CATEGORIES:
        try:
            package = importlib.import_module(f"dolmen.checks.{category}")
        except ModuleNotFoundError as e:
            if e.name == f"dolmen.checks.{category}":
                continue
            raise
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{info.name}")
    return REGISTRY
