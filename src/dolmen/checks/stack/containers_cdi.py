"""CDI specs against this host: they parse, were generated for the loaded driver (hook and
library versions), name device nodes and files that exist, and list every GPU.

A spec is written once (``nvidia-ctk cdi generate``) and goes stale silently: after a
driver update it still mounts ``libcuda.so.<old version>``, which is gone, and podman or
Docker in CDI mode then fail to start every GPU container; after a GPU is replaced or
lost it names a /dev/nvidiaN that no longer exists.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.containers import CdiSpec, ContainerFacts
from dolmen.facts.reading import unrecorded

SOURCE = (
    "NVIDIA Container Toolkit install guide (nvidia-ctk cdi generate, nvidia-ctk cdi list); "
    "Container Device Interface specs in /etc/cdi and /var/run/cdi"
)
CDI_REMEDY = (
    "Regenerate the spec after every driver or GPU change: sudo nvidia-ctk cdi generate "
    "--output=/etc/cdi/nvidia.yaml (toolkit 1.18+ does it at boot: systemctl enable --now "
    "nvidia-cdi-refresh.path), then nvidia-ctk cdi list."
)


def _podman(c: ContainerFacts) -> bool:
    t = c.tools.get("podman")
    return t is not None and t.installed is True


def _problems(p: CdiSpec, driver: str | None, gpus: int) -> list[str]:
    out = []
    if p.driver_version and driver and p.driver_version != driver:
        out.append(
            f"generated for driver {p.driver_version} but driver {driver} is loaded: its "
            "library mounts name files that are gone"
        )
    other = [v for v in p.library_versions if driver and v not in (driver, p.driver_version)]
    if other:
        out.append(f"mounts libraries of driver {', '.join(other)} (loaded: {driver})")
    nodes = [m for m in p.missing if m.startswith("/dev/")]
    files = [m for m in p.missing if not m.startswith("/dev/")]
    if nodes:
        out.append(f"names device nodes that do not exist: {', '.join(nodes[:4])}")
    if files:
        more = f" (and {len(files) - 3} more)" if len(files) > 3 else ""
        out.append(f"mounts files that do not exist: {', '.join(files[:3])}{more}")
    indexed = [d for d in p.devices if d.isdigit()]
    by_uuid = [d for d in p.devices if d.startswith("GPU-") and ":" not in d]
    listed = max(len(indexed), len(by_uuid))
    if p.kind == "nvidia.com/gpu" and gpus and listed < gpus:
        out.append(f"lists {listed} GPU(s), the host has {gpus}")
    return out


@check(
    "stack.container.cdi",
    title="CDI specs for NVIDIA GPUs parse and describe the loaded driver, devices and files",
    level=Level.STANDARD,
    needs=("containers", "stack", "gpu"),
    when=("nvidia_gpu",),
    remedy=CDI_REMEDY,
    source=SOURCE,
)
def cdi(ctx: Context) -> list[Outcome]:
    """Reads the CDI specs (etc/cdi, var/run/cdi) with the device nodes and files they name,
    the toolkit's mode, podman's presence, the loaded driver version and the GPU count."""
    c, s, g = ctx.containers, ctx.stack, ctx.gpu
    cdi_mode = c.toolkit_mode == "cdi"
    podman = _podman(c)
    bad = failed if cdi_mode else warned  # in CDI mode every GPU container depends on the spec
    specs = [p for p in c.cdi_specs if p.error or (p.kind or "").startswith("nvidia.com/")]
    if not specs:
        if (cdi_mode or podman) and unrecorded(c.unread.get("cdi_specs")):
            return [unknown("host", c.unread["cdi_specs"])]
        if cdi_mode or podman:
            user = "the toolkit runs in CDI mode" if cdi_mode else "podman uses CDI for GPUs"
            return [
                bad("host", f"{user} but there is no NVIDIA CDI spec in /etc/cdi or /var/run/cdi")
            ]
        if unrecorded(why := c.unread.get("cdi_specs")):  # no spec, and no folder to hold one
            return [skipped("host", f"NVIDIA CDI specs: {why}", reason=why)]
        return [skipped("host", "no NVIDIA CDI spec, and nothing here requires one")]
    driver = s.driver_version or g.driver_version
    gpus = len(g.gpus) or len(g.pci_gpus)
    out: list[Outcome] = []
    for p in specs:
        subject = f"cdi:/{p.path}"
        if p.error:
            out.append(bad(subject, f"/{p.path} is unusable: {p.error}", error=p.error))
            continue
        ev: dict[str, Any] = {
            "kind": p.kind,
            "devices": list(p.devices),
            "spec_driver": p.driver_version,
            "library_versions": list(p.library_versions),
            "driver": driver,
            "gpus": gpus,
            "missing": list(p.missing),
            "unseen": list(p.unseen),
        }
        problems = _problems(p, driver, gpus)
        if problems:
            out.append(bad(subject, f"/{p.path} " + "; ".join(problems), **ev))
        elif p.unseen:
            out.append(
                unknown(
                    subject,
                    f"/{p.path}: cannot tell whether {len(p.unseen)} device node(s) or file(s)"
                    f" it names exist (not in this bundle: {', '.join(p.unseen[:3])})",
                    **ev,
                )
            )
        elif driver is None and (p.driver_version or p.library_versions):
            out.append(
                unknown(subject, "the loaded driver version is unknown: cannot compare", **ev)
            )
        else:
            out.append(passed(subject, f"/{p.path}: {p.kind}, {len(p.devices)} device(s)", **ev))
    return out
