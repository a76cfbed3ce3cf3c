"""Model objects from the readers' flat dotted keys (``"power.draw"``), shared by NVML and
nvidia-smi so both fill the same fields the same way."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from dolmen.host.gpu.model import Gpu

T = TypeVar("T")


_PLANS: dict[type, tuple[tuple[str, type | None], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, type | None], ...]:
    """Field names of a model class, with the class of each nested group (cached)."""
    plan = _PLANS.get(cls)
    if plan is None:
        out: list[tuple[str, type | None]] = []
        for f in dataclasses.fields(cls):
            factory: object = f.default_factory
            is_group = isinstance(factory, type) and dataclasses.is_dataclass(factory)
            out.append((f.name, factory if is_group and isinstance(factory, type) else None))
        plan = _PLANS[cls] = tuple(out)
    return plan


def build(cls: type[T], values: Mapping[str, Any], prefix: str = "") -> T:
    """A model object from flat dotted keys (``"power.draw"``); absent keys keep defaults."""
    kwargs: dict[str, Any] = {}
    for name, nested in _plan(cls):
        key = prefix + name
        if nested is not None:
            kwargs[name] = build(nested, values, key + ".")
        elif key in values:
            kwargs[name] = values[key]
    return cls(**kwargs)


def model_keys(cls: type = Gpu, prefix: str = "") -> frozenset[str]:
    """Every dotted key ``build`` understands for ``cls`` (readers' tables are checked on it)."""
    keys: set[str] = set()
    for name, nested in _plan(cls):
        if nested is not None:
            keys |= model_keys(nested, prefix + name + ".")
        else:
            keys.add(prefix + name)
    return frozenset(keys)
