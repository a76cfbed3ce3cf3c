"""``dolmen stack``: the exact software stack of a host, locked, compared and restored.

- ``observe(host)`` (``observe.py``): the stack from the facts (os, stack, gpu,
  infiniband), the package database (``packages.py``) and the tools that state a version
  (``sources.py``); a component the host does not show is unknown with the reason.
- ``lockfile.py``: the ``stack.toml`` lock, written and read.
- ``diff.py``: every drift between a lock and a host (also the ``stack.lock`` check).
- ``rules.py`` and ``plan.py``: the KB's compatibility rules, then the apt or dnf commands
  that bring a host to a lock; ``tune/settings/packages.py`` applies them through the
  journaled change engine.

Layer 7 with facts (docs/architecture.md): checks and tune import it; it imports neither.
"""

from __future__ import annotations

from dolmen.stack.diff import Drift, StackDiff, diff
from dolmen.stack.model import Component, FileHash, Lock, Package
from dolmen.stack.observe import observe

__all__ = ["Component", "Drift", "FileHash", "Lock", "Package", "StackDiff", "diff", "observe"]
