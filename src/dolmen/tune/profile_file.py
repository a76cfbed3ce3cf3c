"""One profile file's text, validated: sections, keys, fields and values (no includes).

Every problem is a ConfigError with the file, the line (found by scanning the text,
since tomllib keeps no positions) and the valid choices. ``profile.py`` resolves
includes on top of this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dolmen.config import parse_toml, read_text
from dolmen.errors import ConfigError
from dolmen.tune.settings import PROFILE_SECTIONS, SETTINGS, Entry
from dolmen.tune.settings.base import COMMON_FIELDS

ARCHES = ("x86_64", "aarch64")
PROFILE_KEYS: dict[str, type | tuple[type, ...]] = {
    "description": str,
    "include": (list, str),
    "persist": bool,
    "read_only": bool,
}
_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_.\-]+)\s*=""")


@dataclass(frozen=True)
class Removal:
    """An inherited value a profile removes explicitly."""

    setting: str
    key: str
    origin: str
    why: str
    line: int | None = None


@dataclass(frozen=True)
class RawProfile:
    path: Path
    meta: Mapping[str, Any]
    includes: tuple[str, ...]
    include_line: int | None
    entries: tuple[Entry, ...]
    removals: tuple[Removal, ...]


def parse_profile_file(path: Path) -> RawProfile:
    """Read and validate one profile file."""
    return parse_profile_text(read_text(path, "profile"), str(path))


def parse_profile_text(text: str, path: str) -> RawProfile:
    """Validate one profile file's text (no includes resolved)."""
    data = parse_toml(text, path)
    lines = _key_lines(text)
    meta = data.pop("profile", {})
    if not isinstance(meta, dict):
        raise ConfigError("[profile] must be a table", path=path, line=lines.get(("", "profile")))
    for k, v in meta.items():
        kline = lines.get(("profile", k))
        if k not in PROFILE_KEYS:
            raise ConfigError(
                f"unknown key {k!r} in [profile]; valid keys: {', '.join(sorted(PROFILE_KEYS))}",
                path=path,
                line=kline,
            )
        if not isinstance(v, PROFILE_KEYS[k]) or (k == "include" and not _names(v)):
            raise ConfigError(f"[profile] {k} has the wrong type", path=path, line=kline)
    includes = tuple(
        [meta["include"]] if isinstance(meta.get("include"), str) else meta.get("include", [])
    )
    entries: list[Entry] = []
    removals: list[Removal] = []
    seen: dict[tuple[str, str], int | None] = {}
    for section, body in data.items():
        sline = lines.get(("", section))
        if section not in PROFILE_SECTIONS:
            raise ConfigError(
                f"unknown section [{section}]; valid sections: profile, "
                + ", ".join(PROFILE_SECTIONS),
                path=path,
                line=sline,
            )
        if not isinstance(body, dict):
            raise ConfigError(f"[{section}] must be a table", path=path, line=sline)
        setting = SETTINGS[section]
        for raw_key, raw_entry in _flatten(body, setting.extra_fields):
            line = lines.get((section, raw_key)) or lines.get((section, raw_key.split(".")[0]))
            where = f"{path}:{line}" if line else path
            if raw_key in setting.extra_fields:  # a field written beside the entry, not in it
                raise ConfigError(
                    f"[{section}] {raw_key} is a field of an entry, not a key of its own;"
                    f" write it inside the entry: KEY = {{ value = ..., {raw_key} = ... }}",
                    path=path,
                    line=line,
                )
            try:
                key = setting.key(raw_key)
            except ValueError as e:
                raise ConfigError(f"[{section}] {e}", path=path, line=line) from None
            if (section, key) in seen:
                first = seen[(section, key)]
                raise ConfigError(
                    f"[{section}] {key} is set twice in this profile (first at line {first})",
                    path=path,
                    line=line,
                )
            seen[(section, key)] = line
            got = _entry(section, key, raw_entry, where, path, line)
            if isinstance(got, Removal):
                removals.append(got)
            else:
                entries.append(got)
    return RawProfile(
        Path(path),
        meta,
        includes,
        lines.get(("profile", "include")),
        tuple(entries),
        tuple(removals),
    )


def _entry(
    section: str, key: str, raw: Any, where: str, path: str, line: int | None
) -> Entry | Removal:
    setting = SETTINGS[section]
    fields = raw if isinstance(raw, dict) else {"value": raw}
    valid = COMMON_FIELDS | setting.extra_fields
    for f in fields:
        if f not in valid:
            raise ConfigError(
                f"unknown field {f!r} in [{section}] {key}; valid fields: "
                + ", ".join(sorted(valid)),
                path=path,
                line=line,
            )
    for f in ("source", "why"):
        if f in fields and not isinstance(fields[f], str):
            raise ConfigError(f"[{section}] {key}: {f} must be a string", path=path, line=line)
    why = str(fields.get("why", ""))
    if fields.get("remove") is True:
        if "value" in fields or setting.extra_fields & set(fields):
            raise ConfigError(
                f"[{section}] {key}: remove = true takes no value", path=path, line=line
            )
        return Removal(section, key, where, why, line)
    if "remove" in fields:
        raise ConfigError(f"[{section}] {key}: remove takes only true", path=path, line=line)
    arch = fields.get("arch", ())
    arch = (arch,) if isinstance(arch, str) else tuple(arch)
    if not all(a in ARCHES for a in arch):
        raise ConfigError(
            f"[{section}] {key}: arch {list(arch)} is not valid; valid: {', '.join(ARCHES)}",
            path=path,
            line=line,
        )
    extras = {k: v for k, v in fields.items() if k in setting.extra_fields}
    try:
        value = setting.validate(key, fields.get("value"), extras)
    except ValueError as e:
        raise ConfigError(f"[{section}] {key}: {e}", path=path, line=line) from None
    need = setting.needs_why(key, value)
    if need and not why.strip():
        raise ConfigError(
            f"[{section}] {key} = {value}: {need}",
            path=path,
            line=line,
            hint='add why = "..." to the entry',
        )
    return Entry(section, key, value, str(fields.get("source", "")), why, arch, where, extras)


def _flatten(
    body: Mapping[str, Any], extra: frozenset[str], prefix: str = ""
) -> list[tuple[str, Any]]:
    """Entries of a section; bare dotted keys (``vm.swappiness = 10``) become one key."""
    out: list[tuple[str, Any]] = []
    entry_fields = COMMON_FIELDS | extra
    for k, v in body.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and v and not set(v) & entry_fields:
            out.extend(_flatten(v, extra, f"{name}."))
        else:
            out.append((name, v))
    return out


def _names(v: Any) -> bool:
    items = [v] if isinstance(v, str) else v
    return bool(items) and all(isinstance(i, str) and i for i in items)


def _key_lines(text: str) -> dict[tuple[str, str], int]:
    """(section, key) -> first line; sections themselves under ("", name)."""
    out: dict[tuple[str, str], int] = {}
    section = ""
    for n, line in enumerate(text.splitlines(), 1):
        h = _HEADER.match(line)
        if h:
            section = h.group(1).strip("\"'")
            out.setdefault(("", section), n)
            continue
        k = _KEY.match(line)
        if k:
            out.setdefault((section, k.group(1).strip("\"'")), n)
    return out
