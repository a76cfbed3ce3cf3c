"""What the run found, in a few lines: the verdict's ``inventory`` (host, GPUs, NICs, IB ports,
and the GPU/NIC topology matrix when the run read it).

A report opens with what it looked at (nvidia-smi's header, NHC's host line) before it says
what is wrong; a healthy 8-GPU node that prints only "HEALTHY" has not said what it found.
The inventory is built from the facts the checks already loaded and nothing else: a quick
run never collects more for a report. A subsystem no check loaded is ``not read``; one whose
collector failed is ``unreadable`` with the reason. Plain JSON values, so ``--json`` carries
it as it is (the ``inventory`` object of ``dolmen.verdict/1``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dolmen.facts import FactStore

NOT_READ = "not read"  # no check of this run needed that subsystem
READ = "read"
UNREADABLE = "unreadable"


def inventory(store: FactStore) -> dict[str, Any]:
    """The inventory of the facts this run collected (``FactStore.done``: never collects)."""
    from dolmen.facts import FactError

    out: dict[str, Any] = {}
    parts = (("host", "os", _host), ("gpus", "gpu", _gpus), ("ib", "infiniband", _ib))
    more = (("nics", "network", _nics), ("topology", "topology", _topology))
    for name, subsystem, build in (*parts, *more):
        facts = store.done(subsystem)
        if facts is None:
            out[name] = {"state": NOT_READ}
        elif isinstance(facts, FactError):
            out[name] = {"state": UNREADABLE, "reason": facts.message}
        else:
            out[name] = {"state": READ, **build(facts)}
    if out["gpus"]["state"] == READ:  # the kernel log's GPUs too, when this run read it
        log = store.done("kernel_log")
        if log is not None and not isinstance(log, FactError):
            from dolmen.facts.gpu import seen_with_log

            seen = len(seen_with_log(store.done("gpu"), log)[0])
            out["gpus"]["seen"] = max(out["gpus"]["seen"], seen)
    if out["topology"]["state"] == READ:
        out["topology"]["tree"] = topology_tree(store)
    return out


def _host(os_facts: Any) -> dict[str, Any]:
    dist = os_facts.distribution
    dmi = os_facts.dmi
    return {
        "hostname": os_facts.hostname,
        "os": dist.pretty_name if dist is not None else None,
        "kernel": os_facts.kernel_release,
        "product": dmi.product_name if dmi is not None else None,
    }


def _gpus(gpu: Any) -> dict[str, Any]:
    """Driver-listed GPUs with what an RMA needs; ``seen``: GPUs any source shows (PCI tree,
    kernel log, lspci...), which is more than ``count`` when the driver did not answer."""
    devices = [
        {
            "index": g.position,  # nvidia-smi's "GPU N", nvidia-smi -i N, dcgm-exporter's gpu
            "minor": g.index,  # /dev/nvidia<minor>: differs from the index on some hosts
            "bus_id": g.bus_id,
            "model": g.name,
            "uuid": g.uuid,
            "serial": g.serial,
            "lost": g.lost,
        }
        for g in gpu.gpus
    ]
    models = Counter(g.name or "model not read" for g in gpu.gpus)
    return {
        "count": len(devices),
        "seen": max(gpu.count, len(devices)),  # GPUs named or counted (nvlink -s, topo -m)
        "models": dict(sorted(models.items())),
        "driver": gpu.driver_version,
        "cuda": gpu.cuda_version,
        "source": gpu.source,
        "error": gpu.error,
        "devices": devices,
    }


def _ib(ib: Any) -> dict[str, Any]:
    ports = ib.ports or ib.ibstat
    return {
        "count": len(ports),
        "devices": len({p.device for p in ports}),
        "rates": _counts(_rate(p.rate_gbps) for p in ports),
        "states": _counts(p.state or "unread" for p in ports),
        "link_layers": _counts(p.link_layer or "unread" for p in ports),
        "lost_devices": sorted(ib.lost_devices),
        "reason": ib.unread.get("ports") if not ports else None,
    }


def _nics(net: Any) -> dict[str, Any]:
    """Physical interfaces only (``virtual`` False or unknown), loopback left out."""
    nics = [i for i in net.interfaces if i.link_kind != "loopback" and i.virtual is not True]
    return {
        "count": len(nics),
        "states": _counts(i.operstate or "unread" for i in nics),
        "speeds_mbps": _counts(str(i.speed_mbps) if i.speed_mbps else "unread" for i in nics),
        "reason": net.unread.get("interfaces"),  # why there are none: absent, not in the bundle
    }


def _topology(topo: Any) -> dict[str, Any]:
    """``nvidia-smi topo -m`` as read (level standard: the quick tier never runs it): the
    device labels in order, one row of path codes per device (None: a cell not read), the
    GPUs' CPU and NUMA affinity and the NIC legend; the fleet dashboard's node page shows it."""
    m = topo.matrix
    if m is None:
        return {"devices": [], "reason": topo.unread.get("matrix")}
    # a cell from either device's row: a paste cut before a NIC's row still has its column
    # (the parser keeps no cell for a device and itself: nvidia-smi's X)
    cells = [["X" if a == b else _path(m.path(a, b)) for b in m.devices] for a in m.devices]
    affinity = {
        label: {
            "cpus": None if a.cpus is None else str(a.cpus),
            "numa_node": a.numa_node,
            "gpu_numa_id": a.gpu_numa_id,
        }
        for label, a in m.affinity.items()
    }
    return {
        "devices": list(m.devices),
        "paths": cells,
        "affinity": affinity,
        "nics": dict(m.nic_names),
        "problems": list(m.problems),
    }


def topology_tree(store: FactStore) -> dict[str, Any]:
    """The topology dolmen builds from the PCI tree, as much of ``dolmen.topo/1`` as its
    picture needs (``picture_part``), from the facts this run loaded (the run that read
    the matrix loaded them too: only the devices' sysfs link targets are read for it);
    without one, ``devices`` empty and the ``reason``. The fleet dashboard draws it."""
    from dolmen.facts.topology.of_run import tree_of_run
    from dolmen.facts.topology.tree import empty_reason
    from dolmen.facts.topology.tree_json import picture_part

    try:
        tree = tree_of_run(store)
    except Exception as e:  # a bug drawing a picture must not cost the node its verdict
        return {"devices": [], "reason": f"error: {e.__class__.__name__}: {e}"}
    if isinstance(tree, str):
        return {"devices": [], "reason": tree}
    why = empty_reason(tree)
    return {"devices": [], "reason": why} if why is not None else picture_part(tree)


def _path(path: Any) -> str | None:
    return None if path is None else str(path)


def _rate(gbps: float | None) -> str:
    """``400`` Gb/s as a word (a key of ``rates``), ``unread`` when no rate was read."""
    if gbps is None:
        return "unread"
    return f"{gbps:g}"


def _counts(words: Any) -> dict[str, int]:
    """Occurrences of each word, most common first (ties by name): stable JSON, stable text."""
    c = Counter(words)
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
