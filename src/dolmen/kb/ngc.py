"""NGC PyTorch container releases: the CUDA, cuDNN, NCCL and TensorRT each one ships.

Data: ``kb/data/ngc.toml``. A release's minimum driver is the CUDA table's
minimum for its toolkit (``NgcTable.min_driver``), not a number copied twice.
"""

from __future__ import annotations

import re

from dolmen.frozen import frozen
from dolmen.kb.cuda import CudaTable, DriverVersion
from dolmen.kb.datafile import Field, KbDataError, read_tables

_RELEASE_RE = re.compile(r"\d{2}\.\d{2}")


@frozen
class NgcRelease:
    """One NGC PyTorch container release ("24.05"); None where the data has no figure."""

    release: str
    pytorch: str | None
    cuda: str | None
    cudnn: str | None
    nccl: str | None
    tensorrt: str | None
    ubuntu: str | None
    driver_branch: str | None  # the branch the release is built for ("550")
    datacenter_compat_drivers: tuple[str, ...]
    source: str
    verified: bool
    unverified: tuple[str, ...]
    note: str = ""

    @property
    def image(self) -> str:
        """The image reference on nvcr.io."""
        return f"nvcr.io/nvidia/pytorch:{self.release}-py3"


@frozen
class NgcTable:
    """NGC PyTorch releases, oldest first."""

    releases: tuple[NgcRelease, ...]

    def names(self) -> list[str]:
        """Every release name ("24.05"...), newest first."""
        return [r.release for r in reversed(self.releases)]

    def get(self, release: str) -> NgcRelease | None:
        """The release "24.05" (an "nvcr.io/nvidia/pytorch:" prefix or "-py3" suffix is fine)."""
        name = release.strip().rpartition(":")[2].removesuffix("-py3")
        return next((r for r in self.releases if r.release == name), None)

    def min_driver(self, release: NgcRelease, cuda: CudaTable) -> DriverVersion | None:
        """CUDA's own minimum driver for the release's toolkit (None if the toolkit is unknown)."""
        return None if release.cuda is None else cuda.min_driver(_toolkit(release.cuda))


def _toolkit(cuda: str) -> str:
    # NGC pins the full toolkit build ("12.8.0.38"); the driver table knows X.Y.Z.
    return ".".join(cuda.split(".")[:3])


_SCHEMA = {
    "release": {
        "releases": Field(list, True),
        "pytorch": Field(str),
        "cuda": Field(str),
        "cudnn": Field(str),
        "nccl": Field(str),
        "tensorrt": Field(str),
        "ubuntu": Field(str),
        "driver": Field(str),
        "datacenter_compat_drivers": Field(list),
    }
}


def load_ngc(text: str | None = None) -> NgcTable:
    """Load and validate ``ngc.toml`` (or ``text``, for tests)."""
    rows = read_tables("ngc.toml", _SCHEMA, text=text)["release"]
    out: list[NgcRelease] = []
    for i, row in enumerate(rows, start=1):
        for name in row["releases"]:
            if not isinstance(name, str) or not _RELEASE_RE.fullmatch(name):
                raise KbDataError(f"[[release]] row {i}: {name!r} is not YY.MM", path="ngc.toml")
            out.append(
                NgcRelease(
                    release=name,
                    pytorch=row.get("pytorch"),
                    cuda=row.get("cuda"),
                    cudnn=row.get("cudnn"),
                    nccl=row.get("nccl"),
                    tensorrt=row.get("tensorrt"),
                    ubuntu=row.get("ubuntu"),
                    driver_branch=row.get("driver"),
                    datacenter_compat_drivers=tuple(row.get("datacenter_compat_drivers", ())),
                    source=row["source"],
                    verified=row.get("verified", True),
                    unverified=tuple(row.get("unverified", ())),
                    note=row.get("note", ""),
                )
            )
    out.sort(key=lambda r: r.release)
    return NgcTable(tuple(out))
