"""Which CUDA majors each cuDNN, NCCL and TensorRT release has builds for.

Data: ``kb/data/builds.toml``. A library built for CUDA 12 does not load against
a CUDA 13 runtime (its sonames differ: libcublas.so.12 vs .13), so a cuDNN, NCCL
or TensorRT with no build for any installed toolkit's major is a broken pairing.
Each library's builds are (CUDA major, first release with builds for it, last
one or None while it continues).
"""

from __future__ import annotations

from typing import Any

from dolmen.frozen import frozen
from dolmen.kb.datafile import Field, KbDataError, read_tables

Version = tuple[int, ...]
FILENAME = "builds.toml"


@frozen
class Builds:
    """The CUDA majors one library's releases are built for."""

    id: str  # "cudnn"
    name: str  # "cuDNN"
    rows: tuple[tuple[int, Version, Version | None], ...]
    source: str
    verified: bool = True
    unverified: tuple[str, ...] = ()
    note: str = ""

    def has_build(self, version: Version, cuda_major: int) -> bool | None:
        """Whether ``version`` has a build for ``cuda_major``; None when the table does not
        know that major or ``version`` is too coarse to tell ("9" against 9.12)."""
        row = next((r for r in self.rows if r[0] == cuda_major), None)
        if row is None:
            return None
        _, first, last = row
        lo = _compare(version, first)
        hi = -1 if last is None else _compare(version, last)
        if lo == -1 or hi == 1:
            return False
        if lo is None or hi is None:
            return None
        return True

    def range_text(self, cuda_major: int) -> str:
        """ "9.12 or later" / "8.0 to 9.10" for a CUDA major, or "unknown"."""
        row = next((r for r in self.rows if r[0] == cuda_major), None)
        if row is None:
            return "not in dolmen's table"
        first, last = _dotted(row[1]), row[2]
        return f"{first} or later" if last is None else f"{first} to {_dotted(last)}"


@frozen
class BuildTable:
    """Every library of ``builds.toml``, in data-file order."""

    libraries: tuple[Builds, ...]

    def get(self, library_id: str) -> Builds:
        """The library with this id ("cudnn", "nccl", "tensorrt"); KeyError when unknown."""
        for lib in self.libraries:
            if lib.id == library_id:
                return lib
        raise KeyError(library_id)


def parse_version(text: str) -> Version | None:
    """(9, 13, 0) of "9.13.0"; None when a part is not a number."""
    parts = text.strip().split(".")
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def _compare(version: Version, bound: Version) -> int | None:
    """-1, 0, 1 comparing on the bound's precision; None when ``version`` is a prefix of it."""
    head = version[: len(bound)]
    if len(version) >= len(bound) or head != bound[: len(head)]:
        part = bound[: len(head)]
        return (head > part) - (head < part)
    return None


def _dotted(v: Version) -> str:
    return ".".join(str(p) for p in v)


_SCHEMA = {
    "library": {"id": Field(str, True), "name": Field(str, True), "builds": Field(list, True)}
}


def load_builds(text: str | None = None) -> BuildTable:
    """Load and validate ``builds.toml`` (or ``text``, for tests)."""
    rows = read_tables(FILENAME, _SCHEMA, text=text)["library"]
    out: list[Builds] = []
    for i, row in enumerate(rows, start=1):
        where = f"[[library]] row {i} (id={row['id']!r})"
        if any(b.id == row["id"] for b in out):
            raise KbDataError(f"{where}: duplicate id", path=FILENAME)
        ranges = tuple(_range(where, b) for b in row["builds"])
        majors = [r[0] for r in ranges]
        if not ranges or len(set(majors)) != len(majors):
            raise KbDataError(f"{where}: 'builds' must list each CUDA major once", path=FILENAME)
        out.append(
            Builds(
                id=row["id"],
                name=row["name"],
                rows=ranges,
                source=row["source"],
                verified=row.get("verified", True),
                unverified=tuple(row.get("unverified", ())),
                note=row.get("note", ""),
            )
        )
    return BuildTable(tuple(out))


def _range(where: str, build: Any) -> tuple[int, Version, Version | None]:
    if not isinstance(build, dict) or set(build) - {"cuda", "first", "last"}:
        raise KbDataError(
            f'{where}: each of \'builds\' is {{ cuda = N, first = "X.Y", last = "X.Y" }}',
            path=FILENAME,
        )
    cuda = build.get("cuda")
    if not isinstance(cuda, int) or isinstance(cuda, bool):
        raise KbDataError(f"{where}: 'cuda' must be a CUDA major (an integer)", path=FILENAME)
    first = _version(where, build.get("first"))
    if first is None:
        raise KbDataError(f"{where}: CUDA {cuda} has no 'first' release", path=FILENAME)
    return cuda, first, _version(where, build.get("last"))


def _version(where: str, text: Any) -> Version | None:
    if text is None:
        return None
    v = parse_version(text) if isinstance(text, str) else None
    if v is None:
        raise KbDataError(f"{where}: {text!r} is not a version (X.Y or X.Y.Z)", path=FILENAME)
    return v
