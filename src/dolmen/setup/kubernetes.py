"""The Kubernetes side of the scheduler step: node labels and GPU operator Helm values.

The NVIDIA GPU operator deploys its daemon sets on nodes labelled
``nvidia.com/gpu.present=true`` (node-feature-discovery sets it; dolmen's command sets
it before NFD runs) and skips a component on a node labelled
``nvidia.com/gpu.deploy.<component>=false``: a host that already has the driver or the
container toolkit keeps its own. The Helm values say the same cluster-wide. What the
facts do not show is left out with a comment naming it, never defaulted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class K8sNode:
    """What the labels and values are made of; None: not known (the reason beside it)."""

    name: str
    gpus: int
    driver: str | None  # the loaded driver's version
    driver_why: str = ""
    toolkit: bool | None = None  # nvidia-ctk / nvidia-container-cli installed
    toolkit_why: str = ""
    mig: Sequence[bool | None] = ()  # MIG mode now, per GPU


def labels(n: K8sNode) -> list[str]:
    """``key=value`` labels for ``kubectl label node``."""
    out = [f"nvidia.com/gpu.present={'true' if n.gpus else 'false'}"]
    if n.driver is not None:
        out.append("nvidia.com/gpu.deploy.driver=false")
    if n.toolkit:
        out.append("nvidia.com/gpu.deploy.container-toolkit=false")
    return out


def label_command(n: K8sNode) -> str:
    """The kubectl command that sets them (printed: dolmen does not hold cluster rights)."""
    return f"kubectl label node {n.name} --overwrite " + " ".join(labels(n))


def mig_strategy(modes: Sequence[bool | None]) -> str | None:
    """none (no GPU in MIG mode), single (all), mixed (some); None when a mode is unread."""
    if not modes or any(m is None for m in modes):
        return None
    on = sum(1 for m in modes if m)
    return "none" if on == 0 else "single" if on == len(modes) else "mixed"


def helm_values(n: K8sNode) -> str:
    """values.yaml for the gpu-operator chart (YAML written by hand: four keys)."""
    lines = [f"# gpu-operator values for {n.name}, written by dolmen setup from its facts"]
    if n.driver is not None:
        lines += ["driver:", f"  enabled: false  # the host runs driver {n.driver}"]
    else:
        lines.append(f"# driver.enabled: not set: no loaded driver seen ({n.driver_why})")
    if n.toolkit is True:
        lines += ["toolkit:", "  enabled: false  # the NVIDIA Container Toolkit is installed"]
    elif n.toolkit is False:
        lines += ["toolkit:", "  enabled: true  # no NVIDIA Container Toolkit on the host"]
    else:
        lines.append(f"# toolkit.enabled: not set: unknown ({n.toolkit_why or 'not read'})")
    strategy = mig_strategy(n.mig)
    if strategy is not None:
        lines += ["mig:", f"  strategy: {strategy}"]
    else:
        lines.append("# mig.strategy: not set: the MIG mode of a GPU was not read")
    lines += ["dcgmExporter:", "  enabled: true"]
    return "\n".join(lines) + "\n"
