"""The exact stack of a host, from its facts, its package database and a few tools.

``observe(host)`` is what ``dolmen stack lock`` writes and what ``stack diff`` and the
``stack.lock`` check compare a lock with. Each component takes its version from the
best source the host has (the loaded driver before the driver package, a toolkit's
``version.json`` before its package) and records the others as where it came from;
the builders of each kind are in ``components``, what they read in ``reading``.
"""

from __future__ import annotations

from dolmen.facts import FactStore
from dolmen.host import Host
from dolmen.stack import components as build
from dolmen.stack.model import Component, Lock
from dolmen.stack.packages import read_packages
from dolmen.stack.reading import Ctx, facts_of, manager_of


def observe(host: Host, store: FactStore | None = None) -> Lock:
    """The stack of ``host`` (module docstring); never raises on what a host lacks."""
    store = store or FactStore(host)
    facts = {n: facts_of(store, n) for n in ("os", "stack", "gpu", "infiniband")}
    db = read_packages(host)
    os_facts = facts["os"]
    dist = getattr(os_facts, "distribution", None)
    manager = db.manager or manager_of(dist)
    ctx = Ctx(host, db, manager or "", facts)
    comps: list[Component] = [
        build.kernel(ctx),
        build.driver(ctx),
        build.module(ctx),
        *build.toolkits(ctx),
        *(build.library(ctx, k) for k in ("cudnn", "nccl", "tensorrt")),
        *(build.tool(ctx, k) for k in ("container-toolkit", "fabric-manager", "dcgm", "doca")),
        *build.vbios(ctx),
        *build.nic_firmware(ctx),
    ]
    gpus = getattr(facts["gpu"], "gpus", ()) or ()
    archs = sorted({g.architecture for g in gpus if g.architecture})
    hostname = getattr(os_facts, "hostname", None) or host.hostname
    return Lock(
        host=str(hostname),
        distribution=getattr(dist, "id", None),
        distribution_version=getattr(dist, "version_id", None),
        architecture=getattr(os_facts, "architecture", None),
        package_manager=manager,
        components=tuple(comps),
        gpu_architectures=tuple(archs),
        notes=(f"packages: {db.reason}",) if db.manager is None else (),
    )
