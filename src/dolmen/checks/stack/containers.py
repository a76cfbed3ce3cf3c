"""Container runtimes and the NVIDIA Container Toolkit: GPU containers can start, and CDI
specs describe the driver and the GPUs the host has now."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import (
    Level,
    Outcome,
    check,
    failed,
    passed,
    skipped,
    unknown,
    warned,
)
from dolmen.checks.stack.install import family
from dolmen.facts.containers import ContainerFacts, Tool
from dolmen.facts.reading import unrecorded

SOURCE = "NVIDIA Container Toolkit install guide: nvidia-ctk runtime configure, nvidia-ctk cdi"
CDI_REMEDY = (
    "Regenerate the spec after every driver or GPU change: sudo nvidia-ctk cdi generate "
    "--output=/etc/cdi/nvidia.yaml (toolkit 1.18+ does it at boot: systemctl enable --now "
    "nvidia-cdi-refresh.path), then nvidia-ctk cdi list."
)


def _tool(c: ContainerFacts, name: str) -> Tool | None:
    return c.tools.get(name)


def _installed(c: ContainerFacts, name: str) -> bool:
    t = _tool(c, name)
    return t is not None and t.installed is True


def _unseen(c: ContainerFacts, names: tuple[str, ...]) -> list[str]:
    """What of ``names`` (a tool and its config) the bundle did not record."""
    out = [
        f"{n} --version" for n in names if (t := _tool(c, n)) is not None and t.installed is None
    ]
    out += [c.unread[n].split(": ", 1)[-1] for n in names if unrecorded(c.unread.get(n))]
    return out


def _toolkit_installed(c: ContainerFacts) -> bool:
    return (
        _installed(c, "nvidia-ctk")
        or _installed(c, "nvidia-container-cli")
        or c.toolkit_config is not None
    )


def _install(ctx: Context, runtime: str) -> str:
    """Install the toolkit (package manager of the host) and configure ``runtime``."""
    manager = {
        "ubuntu": "sudo apt-get install -y",
        "debian": "sudo apt-get install -y",
        "rhel": "sudo dnf install -y",
        "suse": "sudo zypper install -y",
    }.get(family(ctx.os.distribution), "install")
    return (
        f"Install the NVIDIA Container Toolkit ({manager} nvidia-container-toolkit, from "
        f"NVIDIA's repository), then {_configure(runtime)}"
    )


def _configure(runtime: str) -> str:
    return (
        f"sudo nvidia-ctk runtime configure --runtime={runtime} && sudo systemctl restart {runtime}"
    )


@check(
    "stack.container.nvidia_runtime",
    title="Docker and containerd can start GPU containers through the NVIDIA runtime",
    level=Level.STANDARD,
    needs=("containers", "os"),
    when=("nvidia_gpu",),
    remedy=f"Configure the runtime: {_configure('docker')} (or --runtime=containerd).",
    source=SOURCE,
)
def nvidia_runtime(ctx: Context) -> list[Outcome]:
    """Reads etc/docker/daemon.json, containerd's config.toml and conf.d drop-ins,
    etc/nvidia-container-runtime/config.toml and which container tools are installed."""
    c = ctx.containers
    docker = _installed(c, "docker") or c.docker is not None
    containerd = _installed(c, "containerd") or c.containerd is not None
    if not docker and not containerd:
        unseen = _unseen(c, ("docker", "containerd"))
        if unseen:  # the bundle did not record them: "not installed" would be a guess
            return [skipped("host", f"not in this bundle: {', '.join(unseen)}")]
        return [skipped("host", "neither Docker nor containerd is installed")]
    toolkit = _toolkit_installed(c)
    out: list[Outcome] = []
    configured = False
    if docker:
        o = _docker(ctx, c, toolkit)
        configured = configured or o.evidence.get("nvidia_runtime") is True
        out.append(o)
    if containerd:
        o = _containerd(ctx, c, toolkit, docker)
        configured = configured or o.evidence.get("nvidia_runtime") is True
        out.append(o)
    if configured:
        if c.toolkit_config is not None:
            out.append(
                passed(
                    "runtime:nvidia-container-toolkit",
                    f"/{c.toolkit_config} present (mode {c.toolkit_mode or 'default'})",
                    mode=c.toolkit_mode,
                )
            )
        else:
            why = c.unread.get("toolkit_config", "missing")
            if unrecorded(why):
                out.append(unknown("runtime:nvidia-container-toolkit", why))
                return out
            out.append(
                warned(
                    "runtime:nvidia-container-toolkit",
                    f"the nvidia runtime is configured but the toolkit's config is absent "
                    f"({why}): the nvidia-container-toolkit package is missing or broken",
                    remedy=_install(ctx, "docker" if docker else "containerd"),
                )
            )
    return out


def _docker(ctx: Context, c: ContainerFacts, toolkit: bool) -> Outcome:
    subject = "runtime:docker"
    why = c.unread.get("docker", "")
    if c.docker is None and why.startswith("malformed"):
        return failed(
            subject,
            f"/etc/docker/daemon.json is not a JSON object ({why}): dockerd will not start",
            remedy="Fix the file (python3 -m json.tool /etc/docker/daemon.json shows where), "
            f"then {_configure('docker')}.",
        )
    if c.docker is None and why and not why.startswith("missing"):
        return unknown(subject, f"/etc/docker/daemon.json could not be read: {why}")
    runtimes = dict(c.docker.runtimes) if c.docker else {}
    ev: dict[str, Any] = {
        "nvidia_runtime": "nvidia" in runtimes,
        "runtimes": runtimes,
        "default_runtime": c.docker.default_runtime if c.docker else None,
        "toolkit_installed": toolkit,
    }
    if "nvidia" in runtimes:
        default = " (the default runtime)" if c.docker and c.docker.nvidia_default else ""
        return passed(subject, f"Docker has the nvidia runtime{default}", **ev)
    if toolkit:
        return warned(
            subject,
            "Docker has no nvidia runtime: docker run --gpus works through the toolkit's hook, "
            "but --runtime=nvidia and the toolkit's CDI mode do not",
            remedy=f"{_configure('docker')}.",
            **ev,
        )
    return failed(
        subject,
        "Docker is installed but the NVIDIA Container Toolkit is not: containers cannot use "
        "the GPUs (docker run --gpus fails: could not select device driver)",
        remedy=_install(ctx, "docker"),
        **ev,
    )


def _containerd(ctx: Context, c: ContainerFacts, toolkit: bool, docker: bool) -> Outcome:
    subject = "runtime:containerd"
    why = c.unread.get("containerd", "")
    if c.containerd is None and why.startswith("malformed"):
        return failed(
            subject,
            f"containerd's configuration does not parse ({why}): containerd will not start",
            remedy="Fix the TOML (containerd config dump shows the error), then "
            f"{_configure('containerd')}.",
        )
    runtimes = list(c.containerd.runtimes) if c.containerd else []
    ev: dict[str, Any] = {
        "nvidia_runtime": "nvidia" in runtimes,
        "runtimes": runtimes,
        "default_runtime": c.containerd.default_runtime if c.containerd else None,
        "files": [f"/{f}" for f in c.containerd.files] if c.containerd else [],
    }
    if "nvidia" in runtimes:
        return passed(subject, "containerd has the nvidia runtime", **ev)
    if docker and not runtimes:
        # Docker's own containerd (containerd.io) runs with the CRI plugin disabled.
        return skipped(subject, "containerd serves Docker only (no CRI runtime configured)")
    return warned(
        subject,
        "containerd has no nvidia runtime: Kubernetes pods cannot request nvidia.com/gpu "
        "(unless the GPU Operator installs it)",
        remedy=_configure("containerd") if toolkit else _install(ctx, "containerd"),
        **ev,
    )


@check(
    "stack.container.cdi",
    title="CDI specs for NVIDIA GPUs parse and describe the loaded driver and every GPU",
    level=Level.STANDARD,
    needs=("containers", "stack", "gpu"),
    when=("nvidia_gpu",),
    remedy=CDI_REMEDY,
    source=SOURCE + " (Container Device Interface specs in /etc/cdi and /var/run/cdi)",
)
def cdi(ctx: Context) -> list[Outcome]:
    """Reads the CDI specs (etc/cdi, var/run/cdi), the toolkit's mode, podman's presence, the
    loaded driver version and the GPU count."""
    c, s, g = ctx.containers, ctx.stack, ctx.gpu
    cdi_mode = c.toolkit_mode == "cdi"
    podman = _installed(c, "podman")
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
        return [skipped("host", "no NVIDIA CDI spec, and nothing here requires one")]
    driver = s.driver_version or g.driver_version
    gpus = len(g.gpus) or len(g.pci_gpus)
    out: list[Outcome] = []
    for p in specs:
        subject = f"cdi:/{p.path}"
        if p.error:
            out.append(bad(subject, f"/{p.path} is unusable: {p.error}", error=p.error))
            continue
        indexed = [d for d in p.devices if d.isdigit()]
        by_uuid = [d for d in p.devices if d.startswith(("GPU-", "MIG-")) and ":" not in d]
        listed = max(len(indexed), len([d for d in by_uuid if d.startswith("GPU-")]))
        ev: dict[str, Any] = {
            "kind": p.kind,
            "devices": list(p.devices),
            "spec_driver": p.driver_version,
            "driver": driver,
            "gpus": gpus,
        }
        problems = []
        if p.driver_version and driver and p.driver_version != driver:
            problems.append(
                f"generated for driver {p.driver_version} but driver {driver} is loaded: its "
                "library mounts name files that are gone"
            )
        if p.kind == "nvidia.com/gpu" and gpus and listed < gpus:
            problems.append(f"lists {listed} GPU(s), the host has {gpus}")
        if problems:
            out.append(bad(subject, f"/{p.path} " + "; ".join(problems), **ev))
        else:
            out.append(passed(subject, f"/{p.path}: {p.kind}, {len(p.devices)} device(s)", **ev))
    return out
