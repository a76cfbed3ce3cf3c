"""Named bench baselines: ``--save-baseline NAME`` keeps a run, ``--baseline NAME`` reads it.

``dolmen.baseline`` is not a store: it writes a hardware inventory (``dolmen.baseline/1``)
to a file the user names, and ``validate --baseline FILE`` reads it back. A bench
baseline is a different document under a name, so it lives beside dolmen's other state:
``<state>/bench/baselines/<NAME>.json`` (``$DOLMEN_STATE_DIR``, /var/lib/dolmen by
default), the run's own bench.json unchanged, written atomically. Names are plain
(letters, digits, ``.``, ``_``, ``-``; 64 at most; not starting with a dot), so a name
is never a path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dolmen.errors import EnvironmentProblem, InputError, UsageError
from dolmen.fsutil import atomic_write
from dolmen.paths import state_dir
from dolmen.report.bench.document import dump_bench, load_bench

_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")


def baselines_dir() -> Path:
    """Where the named bench baselines are."""
    return state_dir() / "bench" / "baselines"


def baseline_path(name: str) -> Path:
    """The file of baseline ``name``; UsageError for a name that is not plain."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"baseline name {name!r} is not allowed",
            hint="use letters, digits, '.', '_' and '-' (64 at most, not starting with '.')",
        )
    return baselines_dir() / f"{name}.json"


def baseline_names() -> list[str]:
    """The stored baselines' names, sorted."""
    folder = baselines_dir()
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json") if _NAME.fullmatch(p.stem))


def save_baseline(name: str, doc: Mapping[str, Any]) -> Path:
    """Store ``doc`` as baseline ``name`` (replacing one of that name); its path."""
    path = baseline_path(name)
    try:
        atomic_write(path, dump_bench(doc))
    except OSError as e:
        raise EnvironmentProblem(
            f"cannot store bench baseline {name!r} in {path.parent} ({e.strerror or e})",
            hint="run as a user who may write there, or point DOLMEN_STATE_DIR elsewhere",
        ) from None
    return path


def load_baseline(name: str) -> dict[str, Any]:
    """Baseline ``name``; InputError naming the stored ones when there is none of that name."""
    path = baseline_path(name)
    if not path.exists():
        names = baseline_names()
        stored = ", ".join(names) if names else "none yet"
        raise InputError(
            f"no bench baseline named {name!r} (stored: {stored})",
            hint="store one with: dolmen bench --save-baseline NAME",
        )
    return load_bench(path)
