"""Container runtimes and the NVIDIA Container Toolkit: Docker, containerd and CRI-O can
start GPU containers (the CDI specs: containers_cdi.py)."""

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
    title="Docker, containerd and CRI-O can start GPU containers through the NVIDIA runtime",
    level=Level.STANDARD,
    needs=("containers", "os"),
    when=("nvidia_gpu",),
    remedy=f"Configure the runtime: {_configure('docker')} (or --runtime=containerd).",
    source=SOURCE,
)
def nvidia_runtime(ctx: Context) -> list[Outcome]:
    """Reads etc/docker/daemon.json, containerd's config.toml and conf.d drop-ins, CRI-O's
    crio.conf and crio.conf.d, etc/nvidia-container-runtime/config.toml and which container
    tools are installed."""
    c = ctx.containers
    docker = _installed(c, "docker") or c.docker is not None
    containerd = _installed(c, "containerd") or c.containerd is not None
    crio = c.crio is not None or (c.unread.get("crio") or "").startswith("malformed")
    if not docker and not containerd and not crio:
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
    if crio:
        o = _crio(ctx, c, toolkit)
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


def _crio(ctx: Context, c: ContainerFacts, toolkit: bool) -> Outcome:
    subject = "runtime:crio"
    why = c.unread.get("crio", "")
    if c.crio is None:
        return failed(
            subject,
            f"CRI-O's configuration does not parse ({why}): crio will not start",
            remedy=f"Fix the TOML (crio config shows the error), then {_configure('crio')}.",
        )
    ev: dict[str, Any] = {
        "nvidia_runtime": "nvidia" in c.crio.runtimes,
        "runtimes": dict(c.crio.runtimes),
        "default_runtime": c.crio.default_runtime,
        "files": [f"/{f}" for f in c.crio.files],
    }
    if "nvidia" in c.crio.runtimes:
        return passed(subject, "CRI-O has the nvidia runtime", **ev)
    return warned(
        subject,
        "CRI-O has no nvidia runtime: Kubernetes pods on it cannot request nvidia.com/gpu "
        "(unless the GPU Operator installs it)",
        remedy=_configure("crio") if toolkit else _install(ctx, "crio"),
        **ev,
    )
