"""``dolmen.kb``: published facts as data files, loaded into typed, frozen tables.

``load_kb()`` reads every data file of ``kb/data`` once per process (cached)
and validates it; a malformed file raises ``KbDataError`` naming the file and
the row. Every row carries its ``source``; rows recalled rather than checked
say ``verified = false``.

    kb = load_kb()
    kb.cuda.compatible("12.4", "550.54.15")   # (True, "driver 550.54.15 >= ...")
    kb.gpus.match("NVIDIA H100 80GB HBM3")    # GpuModel(id="h100-sxm", ...)
    kb.ngc.get("24.05")                       # NgcRelease(cuda="12.4.1", ...)
    kb.xids                                   # XidCatalogue
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from dolmen.kb.cuda import CompatMode, CompatVerdict, CudaTable, DriverVersion, load_cuda
from dolmen.kb.datafile import KbDataError
from dolmen.kb.gpus import GpuCatalogue, GpuModel, load_gpus
from dolmen.kb.ngc import NgcRelease, NgcTable, load_ngc
from dolmen.kb.xids import XidCatalogue, load_xids

__all__ = [
    "CompatMode",
    "CompatVerdict",
    "CudaTable",
    "DriverVersion",
    "GpuCatalogue",
    "GpuModel",
    "KbDataError",
    "KnowledgeBase",
    "NgcRelease",
    "NgcTable",
    "XidCatalogue",
    "load_kb",
]


@dataclass(frozen=True)
class KnowledgeBase:
    """Every table of the knowledge base."""

    cuda: CudaTable
    gpus: GpuCatalogue
    ngc: NgcTable
    xids: XidCatalogue


@functools.cache
def load_kb() -> KnowledgeBase:
    """The knowledge base, loaded and validated once per process."""
    return KnowledgeBase(cuda=load_cuda(), gpus=load_gpus(), ngc=load_ngc(), xids=load_xids())
