"""Which shipped profile suits a host, and why (``dolmen tune recommend``).

Like TuneD's recommend.conf, the choice depends on what the host is, read
from its facts: NVIDIA GPUs on the PCI bus and their class (a 3D controller,
class 0302, is a data-centre board; a VGA controller, 0300, a desk-side or
workstation card), InfiniBand/RoCE ports (a multi-node fabric), the CPU
architecture and whether it is a virtual machine. The first rule that holds
wins; every rule says why in words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dolmen.facts import FactError, FactStore
from dolmen.host import Host

NVIDIA = "10de"
MANY_GPUS = 4  # DGX/HGX boards come in 4s and 8s; fewer 3D controllers is a serving box


@dataclass(frozen=True)
class Traits:
    """What recommend looks at."""

    datacenter_gpus: tuple[str, ...]  # PCI addresses of NVIDIA 3D controllers
    display_gpus: tuple[str, ...]  # NVIDIA VGA controllers
    fabric_ports: tuple[str, ...]  # InfiniBand/RoCE ports, "mlx5_0/1"
    arch: str | None
    virtualization: str | None  # None: bare metal or unknown
    unread: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Recommendation:
    """The profile and the reasons, rule by rule."""

    profile: str
    why: str
    notes: tuple[str, ...]
    traits: Traits

    def to_json(self) -> dict[str, Any]:
        """The ``dolmen.tune.recommend/1`` document."""
        t = self.traits
        return {
            "schema": "dolmen.tune.recommend/1",
            "profile": self.profile,
            "why": self.why,
            "notes": list(self.notes),
            "traits": {
                "datacenter_gpus": list(t.datacenter_gpus),
                "display_gpus": list(t.display_gpus),
                "fabric_ports": list(t.fabric_ports),
                "arch": t.arch,
                "virtualization": t.virtualization,
                "unread": t.unread,
            },
        }


def read_traits(host: Host) -> Traits:
    """The traits of ``host`` from its pci, infiniband and os facts."""
    store = FactStore(host)
    unread: dict[str, str] = {}

    def get(name: str) -> Any:
        try:
            return store.get(name)
        except FactError as e:
            unread[name] = e.message
            return None

    pci, ib, osf = get("pci"), get("infiniband"), get("os")
    dc, disp = [], []
    for d in pci.devices if pci is not None else ():
        if (d.vendor_id or "").lower().removeprefix("0x") != NVIDIA or not d.class_id:
            continue
        cls = d.class_id.lower().removeprefix("0x")[:4]
        if cls == "0302":
            dc.append(d.bdf)
        elif cls == "0300":
            disp.append(d.bdf)
    ports = tuple(f"{p.device}/{p.port}" for p in (ib.ports if ib is not None else ()))
    virt = None if osf is None else osf.virtualization
    return Traits(
        tuple(dc),
        tuple(disp),
        ports,
        None if osf is None else osf.architecture,
        None if virt in (None, "none") else virt,
        unread,
    )


Rule = tuple[str, Callable[[Traits], str | None]]


def _no_gpu(t: Traits) -> str | None:
    if t.datacenter_gpus or t.display_gpus:
        return None
    return (
        "no NVIDIA GPU on the PCI bus: nothing for a GPU profile to tune "
        "(plan baseline shows how this host differs from stock)"
    )


def _display(t: Traits) -> str | None:
    if t.datacenter_gpus:
        return None
    return (
        f"{len(t.display_gpus)} NVIDIA display-class GPU(s) (VGA controller, class 0300): "
        "a desk-side or workstation card"
    )


def _fabric(t: Traits) -> str | None:
    if not t.fabric_ports:
        return None
    return (
        f"{len(t.datacenter_gpus)} data-centre GPU(s) and {len(t.fabric_ports)} "
        "InfiniBand/RoCE port(s): a node of a multi-node training fabric"
    )


def _many(t: Traits) -> str | None:
    if len(t.datacenter_gpus) < MANY_GPUS:
        return None
    return (
        f"{len(t.datacenter_gpus)} data-centre GPUs (3D controllers) and no fabric: "
        "a single-node training server"
    )


def _few(t: Traits) -> str | None:
    return (
        f"{len(t.datacenter_gpus)} data-centre GPU(s), fewer than {MANY_GPUS}, no fabric: "
        "a serving node"
    )


RULES: tuple[Rule, ...] = (
    ("baseline", _no_gpu),
    ("workstation", _display),
    ("ai-training-multinode", _fabric),
    ("ai-training", _many),
    ("ai-inference", _few),
)


def recommend(traits: Traits) -> Recommendation:
    """The first rule that holds (see module docstring). Pure."""
    notes = []
    if traits.virtualization:
        notes.append(
            f"a virtual machine ({traits.virtualization}): CPU frequency, IRQ and boot settings "
            "usually belong to the hypervisor and will be skipped"
        )
    if traits.arch == "aarch64":
        notes.append("arm64: the x86-only values (iommu=pt) skip; the aarch64 ones apply")
    notes.extend(f"could not read {k} facts: {v}" for k, v in traits.unread.items())
    for profile, rule in RULES:
        why = rule(traits)
        if why is not None:
            return Recommendation(profile, why, tuple(notes), traits)
    raise AssertionError("the last rule always holds")
