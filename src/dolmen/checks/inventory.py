"""What the run found, in a few lines: the verdict's ``inventory`` (host, GPUs, NICs, IB ports).

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
    for name, subsystem, build in (*parts, ("nics", "network", _nics)):
        facts = store.done(subsystem)
        if facts is None:
            out[name] = {"state": NOT_READ}
        elif isinstance(facts, FactError):
            out[name] = {"state": UNREADABLE, "reason": facts.message}
        else:
            out[name] = {"state": READ, **build(facts)}
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
        "seen": max(len(gpu.seen), len(devices)),
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


def _rate(gbps: float | None) -> str:
    """``400`` Gb/s as a word (a key of ``rates``), ``unread`` when no rate was read."""
    if gbps is None:
        return "unread"
    return f"{gbps:g}"


def _counts(words: Any) -> dict[str, int]:
    """Occurrences of each word, most common first (ties by name): stable JSON, stable text."""
    c = Counter(words)
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
