"""Tuning profiles: TOML files with ``include``, validated at load (DESIGN.md "Changes").

    [profile]
    description = "DGX-like single-node training"
    include = ["nvidia-base"]          # merged key by key, in order
    persist = true                     # write sysctl.d/tmpfiles.d for the next boot

    [sysctl]
    "vm.swappiness" = { value = 10, source = "TuneD throughput-performance" }
    "vm.dirty_ratio" = { remove = true, why = "inherited, but not for this host" }

Better than TuneD's ``include``/``replace``: an included profile's values are
merged one by one (``replace=1`` dropped whole sections, tuned issue #252);
one value is removed with ``remove = true``; two included profiles that
disagree on a value are an error unless the including profile sets it. Any
problem (unknown section, key or field, wrong type, out-of-range value, the
same setting twice, an include cycle) is a ConfigError naming the file, the
line and the valid choices; nothing is applied.

Profiles are looked up by name in the site folder (``<config dir>/profiles``)
and then among the shipped ones; ``include = ["dolmen/ai-training"]`` names
a shipped profile explicitly, and a site profile that includes its own name
gets the shipped one of that name.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dolmen.errors import ConfigError
from dolmen.paths import config_dir
from dolmen.tune.settings import PROFILE_SECTIONS, SETTINGS, Entry
from dolmen.tune.settings.base import COMMON_FIELDS

SHIPPED = Path(__file__).parent / "profiles"
ARCHES = ("x86_64", "aarch64")
PROFILE_KEYS: dict[str, type | tuple[type, ...]] = {
    "description": str,
    "include": (list, str),
    "persist": bool,
    "read_only": bool,
}
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")
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
class Profile:
    """A profile with its includes merged: every entry knows the file and line it came from."""

    name: str
    path: str
    description: str
    includes: tuple[str, ...]
    persist: bool
    read_only: bool
    entries: tuple[Entry, ...]
    removed: tuple[Removal, ...] = ()
    shipped: bool = True


def profile_dirs() -> list[tuple[str, Path]]:
    """Where profiles are looked up, in order: the site's, then dolmen's own."""
    return [("site", config_dir() / "profiles"), ("shipped", SHIPPED)]


def find_profile(name: str, *, including: Path | None = None) -> Path:
    """The file of a profile name (see module docstring); ConfigError naming the choices."""
    if name.endswith(".toml") or ("/" in name and not name.startswith("dolmen/")):
        path = Path(name)
        if not path.is_file():
            raise ConfigError("no such profile file", path=name)
        return path
    shipped_only = name.startswith("dolmen/")
    bare = name.removeprefix("dolmen/")
    if not _NAME.match(bare):
        raise ConfigError(f"{name!r} is not a profile name (lowercase letters, digits, - _ .)")
    for kind, folder in profile_dirs():
        if shipped_only and kind != "shipped":
            continue
        path = folder / f"{bare}.toml"
        try:
            found = path.is_file()
        except OSError as e:  # a site folder this user cannot read: say so, never guess
            raise ConfigError(f"cannot look up profiles: {e.strerror}", path=str(folder)) from e
        if found and (including is None or path.resolve() != including.resolve()):
            return path
    names = ", ".join(sorted({p.stem for _, d in profile_dirs() for p in d.glob("*.toml")}))
    raise ConfigError(
        f"no profile named {name!r}; valid profiles: {names}",
        hint="site profiles go in " + str(config_dir() / "profiles"),
    )


def load_profile(name: str) -> Profile:
    """Load, validate and merge a profile by name or path."""
    path = find_profile(name)
    raw = _parse(path)
    merged, removed = _resolve(path, [])
    order = {s: i for i, s in enumerate(SETTINGS)}

    def rank(e: Entry) -> tuple[int, int]:
        keys = SETTINGS[e.setting].key_order
        return order[e.setting], keys.index(e.key) if e.key in keys else len(keys)

    entries = sorted(merged.values(), key=rank)  # stable: file order within a rank
    return Profile(
        name=path.stem,
        path=str(path),
        description=str(raw.meta.get("description", "")),
        includes=raw.includes,
        persist=bool(raw.meta.get("persist", True)),
        read_only=bool(raw.meta.get("read_only", False)),
        entries=tuple(entries),
        removed=tuple(removed),
        shipped=path.resolve().parent == SHIPPED.resolve(),
    )


# --- one file ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Raw:
    path: Path
    meta: Mapping[str, Any]
    includes: tuple[str, ...]
    include_line: int | None
    entries: tuple[Entry, ...]
    removals: tuple[Removal, ...]


def _parse(path: Path) -> _Raw:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read profile: {e}", path=str(path)) from e
    return parse_profile_text(text, str(path))


def parse_profile_text(text: str, path: str) -> _Raw:
    """Validate one profile file's text (no includes resolved)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise ConfigError(
            f"not valid TOML: {e}", path=path, line=int(m.group(1)) if m else None
        ) from e
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
    return _Raw(
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


# --- includes ----------------------------------------------------------------------------
def _resolve(path: Path, stack: list[Path]) -> tuple[dict[tuple[str, str], Entry], list[Removal]]:
    raw = _parse(path)
    merged: dict[tuple[str, str], Entry] = {}
    removed: list[Removal] = []
    own = {(e.setting, e.key) for e in raw.entries} | {(r.setting, r.key) for r in raw.removals}
    for name in raw.includes:
        sub_path = find_profile(name, including=path)
        if sub_path.resolve() in [p.resolve() for p in [*stack, path]]:
            chain = " -> ".join(p.stem for p in [*stack, path, sub_path])
            raise ConfigError(f"include cycle: {chain}", path=str(path), line=raw.include_line)
        sub, sub_removed = _resolve(sub_path, [*stack, path])
        removed.extend(sub_removed)
        for k, e in sub.items():
            prev = merged.get(k)
            if prev is not None and prev.value != e.value and k not in own:
                raise ConfigError(
                    f"included profiles disagree on [{k[0]}] {k[1]}: {prev.origin} sets "
                    f"{prev.value}, {e.origin} sets {e.value}",
                    path=str(path),
                    line=raw.include_line,
                    hint="set the value in this profile to choose",
                )
            merged.setdefault(k, e)
    for r in raw.removals:
        if (r.setting, r.key) not in merged:
            raise ConfigError(
                f"[{r.setting}] {r.key}: nothing to remove, no included profile sets it",
                path=str(path),
                line=r.line,
            )
        del merged[(r.setting, r.key)]
        removed.append(r)
    for e in raw.entries:
        merged[(e.setting, e.key)] = e
    return merged, removed
