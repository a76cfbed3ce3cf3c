"""The lock file: ``stack.toml``, written by ``dolmen stack lock``, read by diff/plan/apply.

TOML, so a person can read and review it (and a fleet can keep it in git)::

    schema = "dolmen.stack.lock/1"
    host = "gpu-node-01"
    distribution = "ubuntu"
    ...
    [components.nccl]
    kind = "nccl"
    state = "known"
    version = "2.21.5"
    source = "/usr/include/nccl.h"
    packages = [{name = "libnccl2", version = "2.21.5-1+cuda12.4", manager = "apt"}]
    files = [{path = "/usr/include/nccl.h", sha256 = "..."}]

    [components.tensorrt]
    kind = "tensorrt"
    state = "unknown"
    reason = "missing: no header or library found; missing: no tensorrt package in ..."

Strings are written with JSON escapes, which TOML's basic strings share. A lock that
does not parse, or holds a field of the wrong type, is an InputError naming the file,
and the line where TOML says.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from dolmen.errors import InputError
from dolmen.fsutil import not_utf8, read_regular
from dolmen.stack.model import KINDS, SCHEMA, Component, FileHash, Lock, Package

MAX_LOCK_BYTES = 4 << 20  # a lock of 100 components is ~40 KiB


def _s(value: str) -> str:
    return json.dumps(value)


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _s(key)


def _inline(d: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{_key(k)} = {_s(str(v))}" for k, v in d.items()) + "}"


def dumps(lock: Lock) -> str:
    """The lock as TOML text (module docstring)."""
    doc = lock.to_json()
    lines = [
        "# The exact software stack of one host: dolmen stack lock (docs/stack.md).",
        "# Compare a host with it: dolmen stack diff FILE; bring one to it: dolmen stack plan.",
    ]
    for key in (
        "schema",
        "host",
        "distribution",
        "distribution_version",
        "architecture",
        "package_manager",
    ):
        if doc[key] is not None:
            lines.append(f"{key} = {_s(str(doc[key]))}")
    lines.append("gpu_architectures = [" + ", ".join(_s(a) for a in doc["gpu_architectures"]) + "]")
    lines.append("notes = [" + ", ".join(_s(n) for n in doc["notes"]) + "]")
    for cid, comp in doc["components"].items():
        lines += ["", f"[components.{_key(cid)}]"]
        for k in ("kind", "state", "version", "source", "reason"):
            if k in comp:
                lines.append(f"{k} = {_s(str(comp[k]))}")
        if "details" in comp:
            lines.append(f"details = {_inline(comp['details'])}")
        for k in ("packages", "files"):
            if k in comp:
                rows = ",\n  ".join(_inline(r) for r in comp[k])
                lines.append(f"{k} = [\n  {rows},\n]")
    return "\n".join(lines) + "\n"


def load(path: Path) -> Lock:
    """Read a lock file; InputError naming the file when it cannot be read or is not one."""
    try:
        raw = read_regular(path, MAX_LOCK_BYTES)
    except FileNotFoundError:
        raise InputError(
            "no such stack lock", path=str(path), hint="write one: dolmen stack lock -o FILE"
        ) from None
    except OSError as e:
        raise InputError(f"cannot read the stack lock: {e.strerror or e}", path=str(path)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"cannot read the stack lock: {not_utf8(e)}",
            path=str(path),
            hint="write it again: dolmen stack lock -o FILE",
        ) from None
    return loads(text, str(path))


def loads(text: str, path: str = "<lock>") -> Lock:
    """Parse lock text; InputError with the line of a TOML error or the bad field."""
    from dolmen.compat import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise InputError(f"not valid TOML: {e}", path=path, line=int(m[1]) if m else None) from None
    try:
        return _from_doc(doc)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(
            f"not a stack lock: {e}", path=path, hint="write one with dolmen stack lock -o FILE"
        ) from None


def _text(d: dict[str, Any], key: str, default: str | None = None) -> str | None:
    v = d.get(key, default)
    if v is not None and not isinstance(v, str):
        raise TypeError(f"{key} must be a string, not {type(v).__name__}")
    return v


def _rows(comp: dict[str, Any], key: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
    rows = comp.get(key, [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TypeError(f"{key} must be a list of tables")
    for r in rows:
        for f in fields:
            if not isinstance(r.get(f), str):
                raise TypeError(f"each of {key} needs a string {f}")
    return rows


def _from_doc(doc: dict[str, Any]) -> Lock:
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"schema is {doc.get('schema')!r}, not {SCHEMA!r}")
    comps = doc.get("components", {})
    if not isinstance(comps, dict):
        raise TypeError("components must be a table")
    out: list[Component] = []
    for cid, c in comps.items():
        if not isinstance(c, dict):
            raise TypeError(f"components.{cid} must be a table")
        kind = _text(c, "kind") or ""
        if kind not in KINDS:
            raise ValueError(f"components.{cid}: kind {kind!r} is not one of {', '.join(KINDS)}")
        state = _text(c, "state", "known")
        version = _text(c, "version")
        if state not in ("known", "unknown") or (state == "known") != (version is not None):
            raise ValueError(
                f"components.{cid}: a known component has a version, an unknown one a reason"
            )
        details = c.get("details", {})
        if not isinstance(details, dict) or not all(isinstance(v, str) for v in details.values()):
            raise TypeError(f"components.{cid}.details must be a table of strings")
        pkgs = tuple(
            Package(r["name"], r["version"], r["manager"])
            for r in _rows(c, "packages", ("name", "version", "manager"))
        )
        files = tuple(
            FileHash(r["path"], r["sha256"]) for r in _rows(c, "files", ("path", "sha256"))
        )
        out.append(
            Component(
                str(cid),
                kind,
                version,
                _text(c, "source", "") or "",
                _text(c, "reason", "") or "",
                dict(details),
                pkgs,
                files,
            )
        )
    archs = doc.get("gpu_architectures", [])
    notes = doc.get("notes", [])
    if not all(isinstance(a, str) for a in [*archs, *notes]):
        raise TypeError("gpu_architectures and notes must be lists of strings")
    return Lock(
        host=_text(doc, "host", "") or "",
        distribution=_text(doc, "distribution"),
        distribution_version=_text(doc, "distribution_version"),
        architecture=_text(doc, "architecture"),
        package_manager=_text(doc, "package_manager"),
        components=tuple(out),
        gpu_architectures=tuple(archs),
        notes=tuple(notes),
    )
