"""Which CUDA major versions each cuDNN, NCCL and TensorRT release has builds for.

A library built for CUDA 12 does not load against a CUDA 13 runtime (its sonames
differ: libcublas.so.12 vs .13), so a cuDNN, NCCL or TensorRT with no build for
any installed toolkit's major is a broken pairing. Rows are (CUDA major, first
release with builds for it, last one or None while it continues); each carries
where it comes from: [V] checked in NVIDIA's support matrix or release notes,
[S] a secondary source (package indexes), [R] recalled, to verify. These belong
in the knowledge base once its schema has a table for them.
"""

from __future__ import annotations

from dataclasses import dataclass

Version = tuple[int, ...]


@dataclass(frozen=True)
class Builds:
    """The CUDA majors one library's releases are built for."""

    name: str  # "cuDNN"
    rows: tuple[tuple[int, Version, Version | None], ...]
    source: str

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


def _compare(version: Version, bound: Version) -> int | None:
    """-1, 0, 1 comparing on the bound's precision; None when ``version`` is a prefix of it."""
    head = version[: len(bound)]
    if len(version) >= len(bound) or head != bound[: len(head)]:
        part = bound[: len(head)]
        return (head > part) - (head < part)
    return None


def _dotted(v: Version) -> str:
    return ".".join(str(p) for p in v)


CUDNN = Builds(
    "cuDNN",
    (
        (11, (8, 0), (9, 10)),
        (12, (8, 8), None),
        (13, (9, 12), None),
    ),
    "cuDNN support matrices: 9.10.2 lists CUDA 11.8 and 12.x, 9.17.0 lists 12.x and 13.x [V]; "
    "8.0.5 packages for CUDA 11.0/11.1 and 8.8.1 for CUDA 12 [S: NVIDIA redist indexes]; "
    "first CUDA 13 build 9.12 [R: NGC 25.08 pairs CUDA 13.0 with cuDNN 9.12]",
)
NCCL = Builds(
    "NCCL",
    (
        (11, (2, 7), None),
        (12, (2, 16), None),
        (13, (2, 27, 7), None),
    ),
    "NCCL 2.10.3 release notes: CUDA 10.2, 11.0, 11.4 [V]; first CUDA 12.0 build 2.16 [R]; "
    "2.27.7 built for CUDA 13 (conda nccl 2.27.7.1, cuda-version >=13) [S]",
)
TENSORRT = Builds(
    "TensorRT",
    (
        (11, (7, 2), (10, 13, 1)),
        (12, (8, 5, 3), None),
        (13, (10, 13, 2), None),
    ),
    "TensorRT 10.0.x support matrix: CUDA 11.8 and 12.4 [V]; 10.13.2 release notes: added "
    "CUDA 13.0, dropped CUDA 11.x [S]; 7.2 first for CUDA 11 and 8.5.3 first for CUDA 12 [R]",
)


def parse_version(text: str) -> Version | None:
    """(9, 13, 0) of "9.13.0"; None when a part is not a number."""
    parts = text.strip().split(".")
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)
