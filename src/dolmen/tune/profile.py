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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dolmen.errors import ConfigError
from dolmen.fsutil import not_a_file
from dolmen.paths import config_dir
from dolmen.tune.profile_file import Removal, parse_profile_file
from dolmen.tune.settings import SETTINGS, Entry

SHIPPED = Path(__file__).parent / "profiles"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")


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

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.tune.profile/1`` document (``dolmen tune show --json``)."""
        return {
            "schema": "dolmen.tune.profile/1",
            "name": self.name,
            "path": self.path,
            "description": self.description,
            "includes": list(self.includes),
            "persist": self.persist,
            "read_only": self.read_only,
            "entries": [
                {
                    "setting": e.setting,
                    "key": e.key,
                    "value": e.value,
                    "from": e.origin,
                    "source": e.source,
                    "why": e.why or None,
                    "arch": list(e.arch),
                    **dict(e.fields),
                }
                for e in self.entries
            ],
            "removed": [
                {"setting": r.setting, "key": r.key, "at": r.origin, "why": r.why}
                for r in self.removed
            ],
        }


def profile_dirs() -> list[tuple[str, Path]]:
    """Where profiles are looked up, in order: the site's, then dolmen's own."""
    return [("site", config_dir() / "profiles"), ("shipped", SHIPPED)]


def find_profile(name: str, *, including: Path | None = None) -> Path:
    """The file of a profile name (see module docstring); ConfigError naming the choices."""
    if name.endswith(".toml") or ("/" in name and not name.startswith("dolmen/")):
        path = Path(name)
        if not path.is_file():
            raise ConfigError(not_a_file(path, "profile file"), path=name)
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


def list_profiles() -> list[dict[str, Any]]:
    """Every profile file, site ones first: name, kind, path, description or the error that
    makes it invalid, and whether a site profile shadows it."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for kind, folder in profile_dirs():
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            row: dict[str, Any] = {"name": path.stem, "kind": kind, "path": str(path)}
            if path.stem in seen:
                row["shadowed"] = True
            try:
                p = load_profile(str(path))
                row.update(description=p.description, read_only=p.read_only)
            except ConfigError as e:
                row["error"] = e.message
            seen.add(path.stem)
            rows.append(row)
    return rows


def load_profile(name: str) -> Profile:
    """Load, validate and merge a profile by name or path."""
    path = find_profile(name)
    raw = parse_profile_file(path)
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


# --- includes ----------------------------------------------------------------------------
def _resolve(path: Path, stack: list[Path]) -> tuple[dict[tuple[str, str], Entry], list[Removal]]:
    raw = parse_profile_file(path)
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
