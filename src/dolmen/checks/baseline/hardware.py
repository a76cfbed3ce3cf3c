"""GPUs, PCIe capability, NVLinks and InfiniBand ports against the baseline."""

from __future__ import annotations

from dolmen.checks.baseline import baseline_of
from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, unknown, warned
from dolmen.values.busid import gpu_subject, pci_subject

_REMEDY = (
    "Compare with the node the baseline came from: reseat or replace the part, check the "
    "riser/cable and the BIOS slot settings; if the change is intended, capture a new "
    "baseline (dolmen baseline capture -o FILE)."
)


@check(
    "baseline.gpus",
    title="Every GPU of the baseline is present, same model and VBIOS",
    level=Level.QUICK,
    needs=("gpu",),
    when=("baseline",),
    remedy=_REMEDY,
)
def gpus(ctx: Context) -> list[Outcome]:
    """Compares the driver's GPUs by bus id with the baseline's slots."""
    facts = ctx.gpu
    if facts.error and not facts.gpus:
        return [unknown("host", f"GPU inventory unreadable: {facts.error}")]
    now = {g.pci_address: g for g in facts.gpus}
    out: list[Outcome] = []
    for slot in baseline_of(ctx).gpus:
        g = now.get(slot.bus_id)
        subject = gpu_subject(slot.bus_id)
        if g is None:
            out.append(
                failed(subject, f"GPU missing (baseline: {slot.model})", expected=slot.model)
            )
        elif slot.model and g.name != slot.model:
            out.append(failed(subject, f"model {g.name}, baseline {slot.model}", found=g.name))
        elif slot.vbios and g.vbios and g.vbios != slot.vbios:
            out.append(warned(subject, f"VBIOS {g.vbios}, baseline {slot.vbios}", found=g.vbios))
        else:
            out.append(passed(subject, f"{g.name} as in the baseline", vbios=g.vbios))
    expected = {s.bus_id for s in baseline_of(ctx).gpus}
    extra = sorted(bdf for bdf in now if bdf and bdf not in expected)
    out += [warned(gpu_subject(bdf), "GPU not in the baseline") for bdf in extra]
    if not out:
        out.append(passed("host", "no GPUs expected, none found"))
    return out


@check(
    "baseline.pcie",
    title="GPUs, NICs, NVMe and NVSwitches keep the baseline's PCIe generation and width",
    level=Level.QUICK,
    needs=("gpu", "pci"),
    when=("baseline",),
    remedy=_REMEDY,
)
def pcie(ctx: Context) -> list[Outcome]:
    """Compares each device's maximum link (what the slot allows, load-independent)."""
    devices = ctx.pci.by_bdf()
    gpus = {g.pci_address: g for g in ctx.gpu.gpus}
    out: list[Outcome] = []
    for slot in baseline_of(ctx).gpus:
        dev = devices.get(slot.bus_id)
        g = gpus.get(slot.bus_id)
        gen = dev.max_link.generation if dev and dev.max_link else (g.pcie.gen_max if g else None)
        width = dev.max_link.width if dev and dev.max_link else (g.pcie.width_max if g else None)
        out.append(
            _compare(gpu_subject(slot.bus_id), slot.pcie_gen_max, slot.pcie_width_max, gen, width)
        )
    for link in baseline_of(ctx).pcie:
        dev = devices.get(link.bdf)
        if dev is None:
            out.append(failed(pci_subject(link.bdf), "device missing from the PCI bus"))
            continue
        top = dev.max_link
        out.append(
            _compare(
                pci_subject(link.bdf),
                link.generation,
                link.width,
                top.generation if top else None,
                top.width if top else None,
            )
        )
    from dolmen.baseline import tracked  # the quick tier without a baseline never gets here

    extra = [d.bdf for d in ctx.pci.devices if tracked(d.vendor_id, d.class_id)]
    known = {link.bdf for link in baseline_of(ctx).pcie}
    out += [
        warned(pci_subject(bdf), "device not in the baseline") for bdf in extra if bdf not in known
    ]
    return out or [passed("host", "no PCIe devices tracked by the baseline")]


def _compare(
    subject: str, gen0: int | None, width0: int | None, gen: int | None, width: int | None
) -> Outcome:
    if gen0 is None and width0 is None:
        return passed(subject, "baseline recorded no link for this device")
    if (gen0 is not None and gen is None) or (width0 is not None and width is None):
        return unknown(subject, "link capability unreadable", baseline=f"Gen{gen0} x{width0}")
    lower = (gen0 is not None and gen is not None and gen < gen0) or (
        width0 is not None and width is not None and width < width0
    )
    ev = {"found": f"Gen{gen} x{width}", "baseline": f"Gen{gen0} x{width0}"}
    if lower:
        return failed(
            subject, f"link capability Gen{gen} x{width}, baseline Gen{gen0} x{width0}", **ev
        )
    return passed(subject, f"Gen{gen} x{width} as in the baseline", **ev)


@check(
    "baseline.nvlink",
    title="Every GPU keeps the baseline's number of NVLinks",
    level=Level.QUICK,
    needs=("gpu",),
    when=("baseline",),
    remedy=_REMEDY,
)
def nvlink(ctx: Context) -> list[Outcome]:
    """Counts the links each GPU reports (any state) against the baseline."""
    by_bus = {g.pci_address: g for g in ctx.gpu.gpus}
    out: list[Outcome] = []
    for slot in baseline_of(ctx).gpus:
        if slot.nvlinks is None:
            continue
        g = by_bus.get(slot.bus_id)
        if g is None:
            continue  # baseline.gpus reports the missing GPU
        links = ctx.gpu.nvlinks.get(g.subject)
        if links is None:
            reason = ctx.gpu.nvlink_notes.get(g.subject) or ctx.gpu.unread.get("nvlinks", "")
            out.append(unknown(g.subject, f"NVLinks unreadable: {reason or 'not reported'}"))
        elif len(links) < slot.nvlinks:
            out.append(failed(g.subject, f"{len(links)} NVLinks, baseline {slot.nvlinks}"))
        else:
            out.append(passed(g.subject, f"{len(links)} NVLinks as in the baseline"))
    return out or [passed("host", "baseline records no NVLinks")]


@check(
    "baseline.ib",
    title="Every InfiniBand/RoCE port of the baseline is present at its rate and firmware",
    level=Level.QUICK,
    needs=("infiniband",),
    when=("baseline",),
    remedy=_REMEDY,
)
def ib(ctx: Context) -> list[Outcome]:
    """Compares ports by device and port number: presence, rate, firmware version."""
    now = {(p.device, p.port): p for p in ctx.infiniband.ports}
    out: list[Outcome] = []
    for want in baseline_of(ctx).ib_ports:
        p = now.get((want.device, want.port))
        subject = f"ib:{want.device}/{want.port}"
        if p is None:
            out.append(failed(subject, "port missing"))
        elif want.rate_gbps and (p.rate_gbps or 0) < want.rate_gbps:
            out.append(failed(subject, f"rate {p.rate_gbps} Gb/s, baseline {want.rate_gbps} Gb/s"))
        elif want.fw_version and p.fw_version and p.fw_version != want.fw_version:
            out.append(warned(subject, f"firmware {p.fw_version}, baseline {want.fw_version}"))
        else:
            out.append(passed(subject, f"{p.rate_gbps} Gb/s as in the baseline"))
    return out or [passed("host", "baseline records no InfiniBand ports")]
