"""NGC framework container releases: the CUDA, cuDNN, NCCL and TensorRT each one ships.

Data: ``kb/data/ngc.toml``. A release's minimum driver is the CUDA table's
minimum for its toolkit (``NgcTable.min_driver``), not a number copied twice.
PyTorch rows are ``NgcTable.releases`` (what ``dolmen kb ngc`` lists); the other
frameworks' rows (``framework = "tensorflow" | "jax" | "tritonserver"``) are
``NgcTable.containers``; ``NgcTable.of(framework)`` gives either, oldest first.
"""

from __future__ import annotations

import re

from dolmen.frozen import frozen
from dolmen.kb.cuda import CudaTable, DriverVersion
from dolmen.kb.datafile import Field, KbDataError, read_tables

_RELEASE_RE = re.compile(r"\d{2}\.\d{2}")

FRAMEWORKS = ("pytorch", "tensorflow", "jax", "tritonserver")

# The tag each framework's images carry on nvcr.io ("tf2": NGC's TensorFlow 2 images).
_TAGS = {"tensorflow": "{release}-tf2-py3"}


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
    framework: str = "pytorch"
    framework_version: str | None = None  # the framework's own version (pytorch: ``pytorch``)

    @property
    def image(self) -> str:
        """The image reference on nvcr.io."""
        tag = _TAGS.get(self.framework, "{release}-py3").format(release=self.release)
        return f"nvcr.io/nvidia/{self.framework}:{tag}"

    @property
    def version(self) -> str | None:
        """The framework version the image ships (PyTorch's commit build, Triton's 2.x...)."""
        return self.pytorch if self.framework == "pytorch" else self.framework_version


@frozen
class NgcTable:
    """NGC PyTorch releases (``releases``) and other frameworks' (``containers``), oldest first."""

    releases: tuple[NgcRelease, ...]
    containers: tuple[NgcRelease, ...] = ()

    def of(self, framework: str) -> tuple[NgcRelease, ...]:
        """The releases of one framework (one of ``FRAMEWORKS``), oldest first."""
        if framework == "pytorch":
            return self.releases
        return tuple(r for r in self.containers if r.framework == framework)

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
        "framework": Field(str),
        "framework_version": Field(str),
    }
}


def load_ngc(text: str | None = None) -> NgcTable:
    """Load and validate ``ngc.toml`` (or ``text``, for tests)."""
    rows = read_tables("ngc.toml", _SCHEMA, text=text)["release"]
    out: list[NgcRelease] = []
    for i, row in enumerate(rows, start=1):
        framework = row.get("framework", "pytorch")
        if framework not in FRAMEWORKS:
            raise KbDataError(
                f"[[release]] row {i}: framework {framework!r} is not one of "
                f"{', '.join(FRAMEWORKS)}",
                path="ngc.toml",
            )
        for drv in row.get("datacenter_compat_drivers", ()):
            if DriverVersion.parse(str(drv)) is None:
                raise KbDataError(
                    f"[[release]] row {i}: compat driver {drv!r} is not a driver version",
                    path="ngc.toml",
                )
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
                    framework=framework,
                    framework_version=row.get("framework_version"),
                )
            )
    out.sort(key=lambda r: (r.framework, r.release))
    return NgcTable(
        tuple(r for r in out if r.framework == "pytorch"),
        tuple(r for r in out if r.framework != "pytorch"),
    )
