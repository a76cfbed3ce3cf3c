"""``dolmen.workloads``: the active workloads of ``validate --level full`` and ``dolmen bench``.

Each workload is a module here with ``run(request) -> Result`` (model.py); ``RUNNERS`` names
them, imported only when run, so this package costs nothing until a workload starts. Torch
is imported only inside this package (engine.py), never by ``dolmen.checks``.
"""

from __future__ import annotations

# name -> "module:function". A runner whose module is not in this build says so (session.py).
RUNNERS: dict[str, str] = {
    "gemm": "dolmen.workloads.gemm:run",
    "memory": "dolmen.workloads.memory:run",
    "collective": "dolmen.workloads.collective:run",
    "storage": "dolmen.workloads.storage:run",
    "dcgm": "dolmen.workloads.dcgm:run",
}
