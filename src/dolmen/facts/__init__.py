"""``dolmen.facts``: what a host is, read through a ``Host`` and parsed by pure functions.

Each subsystem is one module ``dolmen.facts.<name>`` with ``collect(host) ->
<Name>Facts`` (a frozen dataclass); the larger ones are packages that keep the
dataclasses in ``model.py`` beside their parsers, and re-export both with
``collect`` from ``__init__``. A value that could not be read is ``None``
and its field name maps to the reason in the facts' ``unread`` mapping.
Subsystems load lazily: ``dolmen validate --level quick`` collects only what
its checks need.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any

from dolmen.errors import DolmenError
from dolmen.host import Host

# name -> module; each module has collect(host) -> facts dataclass.
SUBSYSTEMS: dict[str, str] = {
    name: f"dolmen.facts.{name}"
    for name in (
        "os",
        "cpu",
        "numa",
        "memory",
        "pci",
        "gpu",
        "kernel_log",
        "infiniband",
        "topology",
        "network",
        "storage",
        "stack",
        "containers",
        "security",
        "tuning",
        "dcgm",  # a recorded dcgmi diag -j (bundles only)
        "crypt",  # encrypted storage's posture (docs/crypt.md); enrolment is dolmen.crypt
    )
}


class FactError(Exception):
    """A subsystem's facts could not be collected; checks that need them become unknown/error."""

    def __init__(self, subsystem: str, message: str, *, bug: bool, detail: str = "") -> None:
        super().__init__(f"{subsystem} facts: {message}")
        self.subsystem = subsystem
        self.message = message
        self.bug = (
            bug  # True: an exception in dolmen (-> error); False: unreadable input (-> unknown)
        )
        self.detail = detail


class FactStore:
    """Collects each subsystem at most once, on first use; failures are remembered too."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._done: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        """The facts of one subsystem; raises FactError when they could not be collected."""
        if name not in self._done:
            self._done[name] = self._collect(name)
        value = self._done[name]
        if isinstance(value, FactError):
            raise value
        return value

    def _collect(self, name: str) -> Any:
        if name not in SUBSYSTEMS:
            raise KeyError(f"unknown facts subsystem {name!r}; valid: {', '.join(SUBSYSTEMS)}")
        try:
            module = importlib.import_module(SUBSYSTEMS[name])
            return module.collect(self.host)
        except DolmenError as e:
            return FactError(name, str(e), bug=False)
        except Exception as e:  # a bug in a collector must not stop the run
            import traceback  # only here: 3 ms a start (with textwrap) for a rare path

            return FactError(
                name, f"{e.__class__.__name__}: {e}", bug=True, detail=traceback.format_exc()
            )

    def done(self, name: str) -> Any:
        """The facts of ``name`` if this run collected them (a FactError if that failed),
        else None: for reports that must not collect anything more."""
        return self._done.get(name)

    def collect(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        """Facts of the named subsystems (all when None), FactError where one failed."""
        out: dict[str, Any] = {}
        for name in names or SUBSYSTEMS:
            try:
                out[name] = self.get(name)
            except FactError as e:
                out[name] = e
        return out


_PLAIN = frozenset({str, int, float, bool})


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, tuples and mappings as plain JSON values (for --json output)."""
    kind = type(value)
    # Most values are plain: the tests below, first, cost a quick --json run 3% (13 M of
    # its 409 M instructions).
    if kind in _PLAIN or value is None:
        return value
    if kind is dict:
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, FactError):
        return {"error": value.message}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [to_jsonable(v) for v in value]
        return sorted(items, key=str) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
