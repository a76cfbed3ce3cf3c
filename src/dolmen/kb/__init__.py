"""``dolmen.kb``: published facts as data files, loaded into typed, frozen tables.

The data files of ``kb/data`` (a ``source`` on every row; rows recalled rather
than checked say ``verified = false``) are the source of truth. A run does not
parse them: ``python -m dolmen.kb`` validates them once and writes the tables as
code into ``kb/prebuilt.py`` (a conformance test keeps it current), and
``load_kb()`` builds each table from there on first use, so the quick tier pays
only for the tables its checks read. The TOML loaders (``load_cuda(text)``...)
stay for the generator and for tests feeding broken files (``KbDataError``
names the file and the row).

    kb = load_kb()
    kb.cuda.compatible("12.4", "550.54.15")   # (True, "driver 550.54.15 >= ...")
    kb.gpus.match("NVIDIA H100 80GB HBM3")    # GpuModel(id="h100-sxm", ...)
    kb.ngc.get("24.05")                       # NgcRelease(cuda="12.4.1", ...)
    kb.xids                                   # XidCatalogue
    kb.builds.get("cudnn")                    # Builds(name="cuDNN", ...)
    kb.hcas.get("MT4129")                     # HcaModel(name="ConnectX-7", max_gbps=400.0)
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dolmen.kb.builds import Builds, BuildTable
    from dolmen.kb.cuda import CompatMode, CompatVerdict, CudaTable, DriverVersion
    from dolmen.kb.datafile import KbDataError
    from dolmen.kb.gpus import GpuCatalogue, GpuModel
    from dolmen.kb.hcas import HcaModel, HcaTable
    from dolmen.kb.ngc import NgcRelease, NgcTable
    from dolmen.kb.xids import XidCatalogue, load_xids

__all__ = [
    "BuildTable",
    "Builds",
    "CompatMode",
    "CompatVerdict",
    "CudaTable",
    "DriverVersion",
    "GpuCatalogue",
    "GpuModel",
    "HcaModel",
    "HcaTable",
    "KbDataError",
    "KnowledgeBase",
    "NgcRelease",
    "NgcTable",
    "XidCatalogue",
    "load_kb",
    "load_xids",
]

# Re-exported names -> their module, imported on first use: importing one table's module
# (dolmen.kb.xids) must not import the others.
_EXPORTS = {
    "BuildTable": "builds",
    "Builds": "builds",
    "CompatMode": "cuda",
    "CompatVerdict": "cuda",
    "CudaTable": "cuda",
    "DriverVersion": "cuda",
    "KbDataError": "datafile",
    "GpuCatalogue": "gpus",
    "GpuModel": "gpus",
    "HcaModel": "hcas",
    "HcaTable": "hcas",
    "NgcRelease": "ngc",
    "NgcTable": "ngc",
    "XidCatalogue": "xids",
    "load_xids": "xids",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dolmen.kb' has no attribute {name!r}")
    return getattr(importlib.import_module(f"dolmen.kb.{module}"), name)


class KnowledgeBase:
    """Every table of the knowledge base, each built from kb/prebuilt.py when first read."""

    @functools.cached_property
    def cuda(self) -> CudaTable:
        """CUDA toolkit -> minimum driver, and the compatibility families."""
        from dolmen.kb import prebuilt

        return prebuilt.cuda()

    @functools.cached_property
    def gpus(self) -> GpuCatalogue:
        """GPU models and the nvidia-smi names that denote them."""
        from dolmen.kb import prebuilt

        return prebuilt.gpus()

    @functools.cached_property
    def ngc(self) -> NgcTable:
        """NGC PyTorch container releases."""
        from dolmen.kb import prebuilt

        return prebuilt.ngc()

    @functools.cached_property
    def xids(self) -> XidCatalogue:
        """The Xid / SXid / kernel-event catalogue (the same object as ``load_xids()``)."""
        from dolmen.kb.xids import load_xids

        return load_xids()

    @functools.cached_property
    def builds(self) -> BuildTable:
        """The CUDA majors cuDNN, NCCL and TensorRT releases are built for."""
        from dolmen.kb import prebuilt

        return prebuilt.builds()

    @functools.cached_property
    def hcas(self) -> HcaTable:
        """RDMA adapter families by part number, with the fastest rate a port reaches."""
        from dolmen.kb import prebuilt

        return prebuilt.hcas()


@functools.cache
def load_kb() -> KnowledgeBase:
    """The knowledge base, one per process; its tables load on first use."""
    return KnowledgeBase()
