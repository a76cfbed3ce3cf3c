"""Memory bandwidth: device-to-device copy per GPU, host-to-device and device-to-host over
each GPU's PCIe link (the link read while the copy runs), and GPU-to-GPU copies for every
ordered pair (nvbandwidth's copy-engine matrix).

Units are GB/s (1e9 bytes/s). A device copy reads and writes each byte, so ``d2d_gbps``
counts both (STREAM Copy's convention, the one the datasheet's memory bandwidth is
comparable with); h2d, d2h and peer count the bytes moved once. On the CPU the d2d copy is
a host memory copy and the rest is None (there is no device link).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from dolmen.frozen import frozen
from dolmen.host import Host
from dolmen.workloads import engine
from dolmen.workloads.model import Request

MIB = 1 << 20
# (device, smoke) -> (device copy, host link and peer copy) sizes in bytes: past every cache
# (an H200 has 60 MB of L2), small enough for the CPU runs of the tests.
SIZES = {
    ("cuda", False): (1024 * MIB, 256 * MIB),
    ("cuda", True): (64 * MIB, 16 * MIB),
    ("cpu", False): (64 * MIB, 0),
    ("cpu", True): (1 * MIB, 0),
}
LINK = ("index", "pcie.link.gen.current", "pcie.link.width.current")
LINK_MAX = (*LINK, "pcie.link.gen.max", "pcie.link.width.max")
# Shares of the budget: device copies, the host link both ways, the peer matrix.
SHARES = (0.4, 0.3, 0.3)


@frozen
class GpuMemory:
    """One GPU's copies; ``pcie`` the link seen under load: gen, width (and the maxima)."""

    gpu: int | None
    subject: str
    d2d_gbps: float
    h2d_gbps: float | None = None
    d2h_gbps: float | None = None
    published_gbps: float | None = None  # the KB's memory bandwidth of the model
    pcie: Mapping[str, int] | None = None
    pcie_unread: str = ""  # why the link could not be read under load


@frozen
class MemoryResult:
    """Per GPU copies, and the peer matrix (None on one GPU and on the CPU)."""

    device: str
    gpus: tuple[GpuMemory, ...]
    peer_gpus: tuple[int, ...] = ()
    peer_gbps: tuple[tuple[float | None, ...], ...] = ()
    models: Mapping[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``memory`` shape of docs/validate-full.md."""
        peer = None
        if self.peer_gpus:
            peer = {"gpus": list(self.peer_gpus), "gbps": [list(r) for r in self.peer_gbps]}
        return {
            "gpus": [
                {
                    "gpu": g.gpu,
                    "subject": g.subject,
                    "d2d_gbps": g.d2d_gbps,
                    "h2d_gbps": g.h2d_gbps,
                    "d2h_gbps": g.d2h_gbps,
                    "published_gbps": g.published_gbps,
                    "pcie": dict(g.pcie) if g.pcie is not None else None,
                }
                for g in self.gpus
            ],
            "peer": peer,
        }


def link_under_load(rows: list[dict[str, str | None]]) -> dict[str, int] | None:
    """The best gen and width the link reached while loaded (a link saves power at idle
    and trains up under load: the best sample is what it can do), with the maxima."""
    out: dict[str, int] = {}
    for key, name in (
        ("gen", "pcie.link.gen.current"),
        ("width", "pcie.link.width.current"),
        ("gen_max", "pcie.link.gen.max"),
        ("width_max", "pcie.link.width.max"),
    ):
        seen = [int(v) for r in rows if (v := engine.number(r.get(name))) is not None]
        if seen:
            out[key] = max(seen)
    return out if "gen" in out and "width" in out else None


def run(request: Request, host: Host | None = None) -> MemoryResult:
    """Run the copies of ``request``; Unavailable where torch or the GPUs cannot."""
    torch = engine.load_torch()
    if host is None:
        from dolmen.host import open_host

        with open_host(None) as live:
            return _run(torch, request, live)
    return _run(torch, request, host)


def _run(torch: Any, request: Request, host: Host) -> MemoryResult:
    big, small = SIZES[(request.device, request.smoke)]
    if request.device == "cpu":
        with engine.abortable(torch, "memory"):
            gbps = _d2d(torch, "cpu", big, request.budget_s, _sink(request, "memory cpu d2d"))
        return MemoryResult("cpu", (GpuMemory(None, "host", gbps),))
    engine.guard(host, request)
    gpus = engine.cuda_devices(torch, request)
    from dolmen.kb import load_kb

    catalogue = load_kb().gpus
    per_gpu = request.budget_s / len(gpus)
    out: list[GpuMemory] = []
    models: dict[int, str] = {}
    with engine.abortable(torch, "memory"):
        for gpu in gpus:
            model = catalogue.match(str(torch.cuda.get_device_name(gpu)))
            if model is not None:
                models[gpu] = model.id
            dev = f"cuda:{gpu}"
            d2d = _d2d(
                torch, dev, big, per_gpu * SHARES[0], _sink(request, f"memory gpu {gpu} d2d")
            )
            seconds = per_gpu * SHARES[1] / 2
            with engine.Sampler(host, gpu, (LINK_MAX, LINK), every_s=0.2) as link:
                h2d = _host_link(
                    torch, dev, small, seconds, "h2d", _sink(request, f"memory gpu {gpu} h2d")
                )
            d2h = _host_link(
                torch, dev, small, seconds, "d2h", _sink(request, f"memory gpu {gpu} d2h")
            )
            out.append(
                GpuMemory(
                    gpu,
                    request.subject(gpu),
                    d2d,
                    h2d,
                    d2h,
                    model.memory_bandwidth_gbs if model is not None else None,
                    link_under_load(link.rows),
                    "" if link.rows else (link.why or "no sample during the copy"),
                )
            )
        peer_gpus: tuple[int, ...] = ()
        matrix: list[list[float | None]] = []
        if len(gpus) > 1:
            peer_gpus = gpus
            pairs = list(itertools.permutations(gpus, 2))
            each = request.budget_s * SHARES[2] / len(pairs)
            rates = {
                (a, b): _peer(torch, a, b, small, each, _sink(request, f"memory peer {a}->{b}"))
                for a, b in pairs
            }
            matrix = [[rates.get((a, b)) for b in gpus] for a in gpus]
    return MemoryResult("cuda", tuple(out), peer_gpus, tuple(tuple(r) for r in matrix), models)


Sink = Callable[[str, float, float | None], None]


def _sink(request: Request, label: str) -> Sink:
    return lambda _l, done, eta: request.progress(label, done, eta)


def _d2d(torch: Any, device: str, nbytes: int, seconds: float, progress: Sink) -> float:
    """Device-to-device copy GB/s, read and write counted (see the module docstring)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    step = make_copy(src, dst)
    iters, secs = engine.timed(
        step, torch=torch, device=device, seconds=seconds, label="d2d", progress=progress
    )
    return 2.0 * nbytes * iters / secs / 1e9


def _host_link(
    torch: Any, device: str, nbytes: int, seconds: float, way: str, progress: Sink
) -> float:
    """Pinned host memory to the GPU (h2d) or back (d2h), GB/s."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).fill_(1)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    step = make_copy(host, dev) if way == "h2d" else make_copy(dev, host)
    iters, secs = engine.timed(
        step, torch=torch, device=device, seconds=seconds, label=way, progress=progress
    )
    return nbytes * iters / secs / 1e9


def _peer(torch: Any, a: int, b: int, nbytes: int, seconds: float, progress: Sink) -> float:
    """GPU ``a`` to GPU ``b``, GB/s (over NVLink, or PCIe peer-to-peer, or through the host
    where neither works: the figure says which, not this code)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{a}").fill_(1)
    dst = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{b}")
    iters, secs = engine.timed(
        make_copy(src, dst),
        torch=torch,
        device=f"cuda:{a},cuda:{b}",
        seconds=seconds,
        label="peer",
        progress=progress,
    )
    return nbytes * iters / secs / 1e9


def make_copy(src: Any, dst: Any) -> Callable[[], None]:
    """One copy of ``src`` into ``dst`` (asynchronous on a GPU: the loop synchronises)."""

    def copy() -> None:
        dst.copy_(src, non_blocking=True)

    return copy
