"""Job backends share one small interface (``base.Backend``); they load lazily by name."""

from __future__ import annotations

import importlib
from typing import Any

from dolmen.errors import UsageError
from dolmen.jobs.backends.base import Backend

# name -> "module:class"; a new backend is one module and one line here.
BACKENDS: dict[str, str] = {
    "local": "dolmen.jobs.backends.local:LocalBackend",
    "slurm": "dolmen.jobs.backends.slurm:SlurmBackend",
    "kubernetes": "dolmen.jobs.backends.kubernetes:KubernetesBackend",
}


def backend_class(name: str) -> type[Backend]:
    """The class of the backend called ``name``; UsageError names the valid choices."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    module, _, attr = BACKENDS[name].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    assert isinstance(cls, type) and issubclass(cls, Backend)
    return cls


def get_backend(name: str, **options: Any) -> Backend:
    """The backend called ``name``, made with ``options``; UsageError names the valid choices."""
    return backend_class(name)(**options)
