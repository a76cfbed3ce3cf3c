"""The file sets a manifest records (``data/sets.toml``): the boot chain and the AI stack.

The sets are data, not literals spread over the code: a site or a distribution that
keeps its bootloader elsewhere changes one file. ``parse_sets`` is pure (a table of
inputs tests it); ``expand`` fills ``{kernel}`` and ``{dolmen}`` once, at seal time, and
the manifest keeps the expanded patterns: a verify walks what was sealed, so a newer
dolmen with more patterns does not call every file it now knows "added".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dolmen.config import parse_toml
from dolmen.errors import InputError

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_KEYS = {"name", "what", "source", "paths", "exclude", "volatile"}
PLACEHOLDERS = ("{kernel}", "{dolmen}")


@dataclass(frozen=True)
class FileSet:
    """One named set: its patterns (host paths, no leading slash), names skipped below
    them, and whether its files are read again at every verify (procfs)."""

    name: str
    what: str
    paths: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    volatile: bool = False
    note: str = ""  # why a pattern was left out at seal time (the dolmen package elsewhere)

    def to_json(self) -> dict[str, object]:
        """The set as the manifest's header records it."""
        out: dict[str, object] = {"name": self.name, "what": self.what, "paths": list(self.paths)}
        if self.exclude:
            out["exclude"] = list(self.exclude)
        if self.volatile:
            out["volatile"] = True
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_json(cls, data: object) -> FileSet:
        """A set from a manifest header; ValueError when malformed."""
        if not isinstance(data, dict):
            raise ValueError("a set is not an object")
        paths, exclude = data.get("paths"), data.get("exclude", [])
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ValueError("a set's paths are not a list of texts")
        if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
            raise ValueError("a set's exclude is not a list of texts")
        for p in paths:
            _check_pattern(p)
        return cls(
            name=str(data.get("name", "")),
            what=str(data.get("what", "")),
            paths=tuple(paths),
            exclude=tuple(exclude),
            volatile=data.get("volatile") is True,
            note=str(data.get("note", "")),
        )


def parse_sets(text: str, path: str = "<sets>") -> tuple[FileSet, ...]:
    """The ``[[set]]`` tables of a sets file; InputError naming the set and the problem."""
    data = parse_toml(text, path)
    raw = data.get("set")
    if not isinstance(raw, list) or not raw or set(data) != {"set"}:
        raise InputError("expected one or more [[set]] tables and nothing else", path=path)
    out: list[FileSet] = []
    for n, item in enumerate(raw, 1):
        where = f"set {n}"
        if not isinstance(item, dict):
            raise InputError(f"{where} is not a table", path=path)
        unknown = set(item) - _KEYS
        if unknown:
            raise InputError(
                f"{where}: unknown key {sorted(unknown)[0]!r}; valid: {', '.join(sorted(_KEYS))}",
                path=path,
            )
        name = item.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise InputError(f"{where}: name must be lower-case words and dashes", path=path)
        if any(s.name == name for s in out):
            raise InputError(f"set {name!r} is defined twice", path=path)
        paths = item.get("paths")
        exclude = item.get("exclude", [])
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise InputError(f"set {name!r}: paths must be a non-empty list of texts", path=path)
        if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
            raise InputError(f"set {name!r}: exclude must be a list of names", path=path)
        for p in paths:
            try:
                _check_pattern(p)
            except ValueError as e:
                raise InputError(f"set {name!r}: {e}", path=path) from None
        volatile = item.get("volatile", False)
        if not isinstance(volatile, bool):
            raise InputError(f"set {name!r}: volatile must be true or false", path=path)
        what = item.get("what", "")
        out.append(FileSet(name, str(what), tuple(paths), tuple(exclude), volatile))
    return tuple(out)


def _check_pattern(pattern: str) -> None:
    """A host path pattern: relative, no ``..``, ``**`` only as its last component."""
    parts = pattern.split("/")
    if not pattern or pattern.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{pattern!r} is not a relative host path (no leading /, no ..)")
    if "**" in parts[:-1] or any("**" in p and p != "**" for p in parts):
        raise ValueError(f"{pattern!r}: ** may only be the last component")
    if len(parts) == 1 and parts[0] == "**":
        raise ValueError("'**' alone would seal the whole file system")


def default_sets() -> tuple[FileSet, ...]:
    """The sets shipped with dolmen (``dolmen/integrity/data/sets.toml``)."""
    from importlib import resources  # 40 ms: a verify reads the sets from its manifest

    ref = resources.files("dolmen.integrity") / "data" / "sets.toml"
    return parse_sets(ref.read_text(encoding="utf-8"), "dolmen/integrity/data/sets.toml")


def expand(sets: tuple[FileSet, ...], *, kernel: str, dolmen: str | None) -> tuple[FileSet, ...]:
    """Fill ``{kernel}`` (a release, such as 6.8.0-45-generic) and ``{dolmen}`` (the package
    folder as a host path without the leading slash, None when it is outside the root)."""
    if not kernel or "/" in kernel or kernel in (".", ".."):
        raise InputError(f"{kernel!r} is not a kernel release")
    out = []
    for s in sets:
        paths, notes = [], []
        for p in s.paths:
            if "{dolmen}" in p and dolmen is None:
                notes.append(f"{p} left out: the dolmen package is not under the sealed root")
                continue
            paths.append(p.replace("{kernel}", kernel).replace("{dolmen}", dolmen or ""))
        for p in paths:
            _check_pattern(p)
        out.append(FileSet(s.name, s.what, tuple(paths), s.exclude, s.volatile, "; ".join(notes)))
    return tuple(out)
