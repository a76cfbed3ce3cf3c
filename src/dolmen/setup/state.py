"""The flow's memory: one JSON file per host in the state folder, written atomically.

A step is recorded ``started`` before it runs and ``done`` (or how it ended) after, each
time with an atomic replace (fsutil.atomic_write: the old or the new file, never half of
one). A run that is killed leaves ``started``: the next run says that step was
interrupted and runs it again (the tune step's own journal then finds any half-applied
profile); ``done`` steps are not run again unless ``--restart`` forgets them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from dolmen.compat import UTC
from dolmen.errors import EnvironmentProblem, InputError
from dolmen.fsutil import atomic_write, read_regular, write_failure
from dolmen.host import Host
from dolmen.paths import state_dir

SCHEMA = "dolmen.setup.state/1"
_LIMIT = 1 << 20


def state_path(host: Host) -> Path:
    """``<state>/setup/state.json`` for this machine; a host tree gets its own file, keyed by
    its folder, so trying setup on a tree never marks the machine's steps done."""
    base = state_dir() / "setup"
    if host.kind == "live" and str(host.root) == "/":
        return base / "state.json"
    root = str(host.root.resolve())
    digest = hashlib.sha256(root.encode()).hexdigest()[:12]
    return base / "trees" / f"{host.root.name or 'root'}-{digest}.json"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class SetupState:
    """The steps' records for one host; ``save`` after every change."""

    def __init__(self, path: Path, doc: dict[str, Any]) -> None:
        self.path = path
        self.doc = doc

    @property
    def steps(self) -> dict[str, dict[str, Any]]:
        """step name -> {"status", "at", "lines"}."""
        steps: dict[str, dict[str, Any]] = self.doc.setdefault("steps", {})
        return steps

    def status(self, step: str) -> str | None:
        """What the last run recorded for ``step`` (done, started, failed...), or None."""
        rec = self.steps.get(step)
        return str(rec.get("status")) if isinstance(rec, dict) else None

    def record(
        self,
        step: str,
        status: str,
        lines: list[str] | tuple[str, ...] = (),
        data: Mapping[str, Any] | None = None,
    ) -> None:
        """Record ``step``'s status now (with what it measured, ``data``) and save (raises
        ``save``'s one-line error if refused)."""
        rec: dict[str, Any] = {"status": status, "at": _now(), "lines": list(lines)}
        if data is not None:
            rec["data"] = dict(data)
        self.steps[step] = rec
        self.save()

    def forget(self) -> None:
        """--restart: every step runs again."""
        self.doc["steps"] = {}

    def save(self) -> None:
        """Atomically replace the file; a refusal is fsutil.write_failure's one line (exit
        3; 2 for a folder that cannot hold files)."""
        payload = (json.dumps(self.doc, indent=2, sort_keys=True) + "\n").encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, payload, mode=0o600)
        except OSError as e:
            left = "the state file is as it was (DOLMEN_STATE_DIR names another folder)"
            raise write_failure(f"setup state {self.path}", e, self.path.parent, left) from None


def load(host: Host) -> SetupState:
    """The state of ``host``'s setup (empty when it never ran); InputError for a damaged
    file, naming it."""
    path = state_path(host)
    empty = {"schema": SCHEMA, "host": host.hostname, "root": str(host.root), "steps": {}}
    if not os.path.lexists(path):
        return SetupState(path, empty)
    hint = f"remove {path} (or pass --restart) to start the flow over"
    try:
        doc = json.loads(read_regular(path, _LIMIT))
    except OSError as e:
        raise InputError(f"unreadable ({e.strerror or e})", path=str(path), hint=hint) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"not JSON ({e})", path=str(path), hint=hint) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"not a {SCHEMA} document", path=str(path), hint=hint)
    if not isinstance(doc.get("steps"), dict):
        raise InputError("'steps' is not a table", path=str(path), hint=hint)
    return SetupState(path, doc)


def writable(state: SetupState) -> None:
    """Refuse up front (exit 3) when the state folder cannot take the file: a run that
    could not remember its steps would not be resumable. Tried, not guessed from modes
    (root passes every access check, a read-only mount does not)."""
    folder = state.path.parent
    probe = folder / f".probe-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise EnvironmentProblem(
            f"setup state folder {folder} is not writable ({e.strerror or e})",
            hint="make it writable (or set DOLMEN_STATE_DIR), or run with --dry-run",
        ) from None
