"""CUDA toolkit -> minimum driver, and whether a driver is enough for a toolkit.

Data: ``kb/data/cuda.toml`` (the CUDA release notes' driver table and the
minor-version compatibility page). Three answers are possible for a toolkit
and a driver: the driver meets the toolkit's own minimum (``native``); it only
meets the family minimum, so the application runs with a limited feature set
(``minor-version``: no PTX JIT of newer PTX, no newer driver APIs); or it is
older than the family minimum (``too-old``, forward compatibility aside).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from dolmen.compat import StrEnum
from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.kb.datafile import Field, KbDataError, read_tables

_DRIVER_RE = pattern(r"\d{2,4}(?:\.\d{1,4}){0,3}")
_TOOLKIT_RE = pattern(r"(\d{1,2})\.(\d{1,2})(?:\.(\d{1,3}))?")


@frozen(order=True)
class DriverVersion:
    """An NVIDIA driver version ("580.105.08", "470.74", "384.111"), compared numerically.

    Components compare as integers, so 535.104.05 > 535.54.03, and a bare
    branch ("580") is below every release of that branch (580 < 580.65.06).
    """

    parts: tuple[int, ...]
    text: str = field(compare=False)

    @classmethod
    def parse(cls, text: str) -> DriverVersion | None:
        """The version in ``text`` (surrounding spaces allowed), or None if it is not one."""
        t = text.strip()
        if not _DRIVER_RE.fullmatch(t):
            return None
        return cls(tuple(int(p) for p in t.split(".")), t)

    @property
    def branch(self) -> int:
        """The driver branch (the first component: 580 for 580.105.08)."""
        return self.parts[0]

    def __str__(self) -> str:
        return self.text


def parse_toolkit(text: str) -> tuple[int, int, int | None] | None:
    """(major, minor, patch or None) of a toolkit version "12.4" / "12.4.1"; None if not one."""
    m = _TOOLKIT_RE.fullmatch(text.strip())
    if m is None:
        return None
    return int(m[1]), int(m[2]), None if m[3] is None else int(m[3])


@frozen
class ToolkitRelease:
    """One line of the release notes' table: the versions it covers and their minimum driver."""

    versions: tuple[str, ...]
    label: str
    min_driver: DriverVersion
    source: str
    verified: bool = True


@frozen
class CompatFamily:
    """A major version's minimum driver under minor-version compatibility."""

    major: int
    min_driver: DriverVersion
    minor_compat_below: DriverVersion | None
    source: str
    verified: bool = True
    note: str = ""


@frozen
class CompatRule:
    """A compatibility rule in words (shown by ``dolmen kb cuda``)."""

    id: str
    text: str
    source: str
    verified: bool = True


class CompatMode(StrEnum):
    """How a driver relates to a toolkit."""

    NATIVE = "native"  # meets the toolkit's own minimum
    MINOR_VERSION = "minor-version"  # meets only the family minimum: limited feature set
    TOO_OLD = "too-old"  # below the family minimum
    UNKNOWN = "unknown"  # toolkit or driver not understood


@frozen
class CompatVerdict:
    """Whether ``driver`` runs applications built with ``toolkit``, and why."""

    toolkit: str
    driver: str
    ok: bool
    mode: CompatMode
    why: str
    required: str | None = None  # the toolkit's own minimum driver, when known
    family_min: str | None = None  # the family minimum, when known


@frozen
class CudaTable:
    """The toolkit -> driver table and the compatibility families."""

    releases: tuple[ToolkitRelease, ...]
    families: Mapping[int, CompatFamily]
    rules: tuple[CompatRule, ...] = ()

    def versions(self) -> list[str]:
        """Every toolkit version the table knows, newest first."""
        return sorted(
            (v for r in self.releases for v in r.versions),
            key=lambda v: tuple(int(p) for p in v.split(".")),
            reverse=True,
        )

    def minor_versions(self) -> list[str]:
        """Every X.Y the table knows ("13.1", "13.0"...), newest first."""
        seen: dict[str, None] = {}
        for v in self.versions():
            seen.setdefault(".".join(v.split(".")[:2]))
        return list(seen)

    def release(self, toolkit: str) -> ToolkitRelease | None:
        """The table row for a toolkit version.

        "12.4" means 12.4 GA (the lowest release of that minor that is not a
        release candidate). An update the table does not list ("12.4.2") takes
        the latest listed update below it.
        """
        parsed = parse_toolkit(toolkit)
        if parsed is None:
            return None
        major, minor, patch = parsed
        same_minor = [
            (tuple(int(p) for p in v.split(".")), r)
            for r in self.releases
            for v in r.versions
            if v.startswith(f"{major}.{minor}.")
        ]
        if not same_minor:
            return None
        same_minor.sort(key=lambda vr: vr[0])
        if patch is None:
            final = [r for _, r in same_minor if "RC" not in r.label.split()]
            return final[0] if final else same_minor[0][1]
        below = [r for v, r in same_minor if v[2] <= patch]
        return below[-1] if below else None

    def min_driver(self, toolkit: str) -> DriverVersion | None:
        """The toolkit's own minimum Linux driver, or None when the table lacks it."""
        row = self.release(toolkit)
        return None if row is None else row.min_driver

    def family(self, toolkit: str | int) -> CompatFamily | None:
        """The compatibility family of a toolkit ("12.4") or a major version (12)."""
        if isinstance(toolkit, int):
            return self.families.get(toolkit)
        parsed = parse_toolkit(toolkit)
        return None if parsed is None else self.families.get(parsed[0])

    def family_min_driver(self, toolkit: str | int) -> DriverVersion | None:
        """The minimum driver of the toolkit's major family (minor-version compatibility)."""
        fam = self.family(toolkit)
        return None if fam is None else fam.min_driver

    def check(self, toolkit: str, driver: str) -> CompatVerdict:
        """Whether ``driver`` is enough for applications built with ``toolkit``, with the reason."""
        drv = DriverVersion.parse(driver)
        if drv is None:
            return CompatVerdict(
                toolkit, driver, False, CompatMode.UNKNOWN, f"{driver!r} is not a driver version"
            )
        if parse_toolkit(toolkit) is None:
            return CompatVerdict(
                toolkit, driver, False, CompatMode.UNKNOWN, f"{toolkit!r} is not a CUDA version"
            )
        row = self.release(toolkit)
        fam = self.family(toolkit)
        fam_min = None if fam is None else str(fam.min_driver)
        if row is not None and drv >= row.min_driver:
            return CompatVerdict(
                toolkit,
                driver,
                True,
                CompatMode.NATIVE,
                f"driver {drv} >= {row.min_driver}, the minimum for CUDA {row.label}",
                str(row.min_driver),
                fam_min,
            )
        required = None if row is None else str(row.min_driver)
        if fam is not None and drv >= fam.min_driver:
            own = (
                f"driver {drv} is below {row.min_driver}, CUDA {row.label}'s own minimum, but"
                if row is not None
                else f"CUDA {toolkit} is not in the release-notes table; driver {drv} is"
            )
            return CompatVerdict(
                toolkit,
                driver,
                True,
                CompatMode.MINOR_VERSION,
                f"{own} >= {fam.min_driver}, the CUDA {fam.major}.x family minimum: runs by"
                " minor-version compatibility with a limited feature set"
                " (no JIT of newer PTX, no newer driver APIs)",
                required,
                fam_min,
            )
        if fam is not None:
            return CompatVerdict(
                toolkit,
                driver,
                False,
                CompatMode.TOO_OLD,
                f"driver {drv} is older than {fam.min_driver}, the CUDA {fam.major}.x family"
                f" minimum{'' if row is None else f' (CUDA {row.label} needs {row.min_driver})'};"
                " only forward compatibility (cuda-compat, data-center GPUs) could bridge it",
                required,
                fam_min,
            )
        if row is not None:  # a toolkit whose family the data does not describe
            return CompatVerdict(
                toolkit,
                driver,
                False,
                CompatMode.TOO_OLD,
                f"driver {drv} is older than {row.min_driver}, the minimum for CUDA {row.label}",
                required,
            )
        known = self.minor_versions()
        return CompatVerdict(
            toolkit,
            driver,
            False,
            CompatMode.UNKNOWN,
            f"CUDA {toolkit} is not in the knowledge base (it knows {known[-1]} to {known[0]})",
        )

    def compatible(self, toolkit: str, driver: str) -> tuple[bool, str]:
        """(ok, why): ``check`` in two values."""
        v = self.check(toolkit, driver)
        return v.ok, v.why


_SCHEMA = {
    "toolkit": {
        "versions": Field(list, True),
        "label": Field(str, True),
        "min_driver": Field(str, True),
    },
    "family": {
        "major": Field(int, True),
        "min_driver": Field(str, True),
        "minor_compat_below": Field(str),
    },
    "rule": {"id": Field(str, True), "text": Field(str, True)},
}


def load_cuda(text: str | None = None) -> CudaTable:
    """Load and validate ``cuda.toml`` (or ``text``, for tests)."""
    tables = read_tables("cuda.toml", _SCHEMA, text=text)
    releases: list[ToolkitRelease] = []
    for i, row in enumerate(tables["toolkit"], start=1):
        for v in row["versions"]:
            if not isinstance(v, str) or parse_toolkit(v) is None or v.count(".") != 2:
                raise KbDataError(
                    f"[[toolkit]] row {i}: version {v!r} is not X.Y.Z", path="cuda.toml"
                )
        releases.append(
            ToolkitRelease(
                tuple(row["versions"]),
                row["label"],
                _driver(row["min_driver"], "toolkit", i),
                row["source"],
                row.get("verified", True),
            )
        )
    families: dict[int, CompatFamily] = {}
    for i, row in enumerate(tables["family"], start=1):
        below = row.get("minor_compat_below")
        families[row["major"]] = CompatFamily(
            row["major"],
            _driver(row["min_driver"], "family", i),
            None if below is None else _driver(below, "family", i),
            row["source"],
            row.get("verified", True),
            row.get("note", ""),
        )
    rules = tuple(
        CompatRule(r["id"], r["text"], r["source"], r.get("verified", True)) for r in tables["rule"]
    )
    return CudaTable(tuple(releases), families, rules)


def _driver(text: Any, table: str, index: int) -> DriverVersion:
    v = DriverVersion.parse(str(text))
    if v is None:
        raise KbDataError(
            f"[[{table}]] row {index}: {text!r} is not a driver version", path="cuda.toml"
        )
    return v
