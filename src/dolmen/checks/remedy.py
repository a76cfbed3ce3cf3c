"""Remedies filled with this host's values, in one place (issue 17).

A remedy is a template: text whose named fields are written ``<name>``, the placeholders a
reader already understands (``nvidia-smi -r -i <bus id>``). The runner fills every finding's
remedy once (``fill``), from the finding's subject, the identity of its device, its evidence
and the node; a field whose value is not known stays as written, so the reader still sees
what goes there. Checks write templates and never format host values into remedies.

Fields (``FIELDS``):

- ``<bus id>``: the GPU as ``nvidia-smi -i`` takes it, ``00000000:86:00.0`` (a ``gpu:``
  subject; its UUID where no bus id is known); ``<bdf>``: the PCI function as lspci and
  sysfs write it, ``0000:86:00.0`` (``gpu:`` and ``pci:`` subjects);
- ``<device>``, ``<port>``: ``ib:<device>/<port>``; ``<netdev>``: the evidence's ``netdev``,
  or ``nic:<name>``; ``<nic>``: ``nic:<name>``; ``<mount>``: ``mount:<path>``; ``<path>``:
  ``lib:<absolute path>``;
- ``<node>``: this node's name in its scheduler; ``<drain>``: the command that takes it out
  of service (``Site``).

Values come from bundles, which are untrusted: a value goes into a command only when it is
made of the characters such names are made of (``_SAFE``); any other stays a placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern
from dolmen.host import NOT_IN_BUNDLE
from dolmen.values.busid import parse_subject

if TYPE_CHECKING:
    from dolmen.checks.model import Device
    from dolmen.host import Host

FIELDS = ("bus id", "bdf", "device", "port", "netdev", "nic", "mount", "path", "node", "drain")
_FIELD = pattern(r"<(" + "|".join(re.escape(f) for f in FIELDS) + r")>")
# Device, interface, node and path names as the kernel, Slurm and Kubernetes make them.
_SAFE = pattern(r"[A-Za-z0-9/][A-Za-z0-9._:@+=/-]{0,199}")
_UNSAFE = pattern(r"[^A-Za-z0-9._:@+=/-]")

# Where a node shows it runs a scheduler's agent. A bundle without these files does not
# show the node is not in one (absence is no evidence): the remedy then names both.
SLURM_PATHS = (
    "etc/slurm/slurm.conf",
    "etc/slurm-llnl/slurm.conf",
    "usr/sbin/slurmd",
    "var/spool/slurmd",
    "run/slurmd.pid",
)
KUBELET_PATHS = (
    "var/lib/kubelet/config.yaml",
    "var/lib/kubelet/kubeconfig",
    "etc/kubernetes/kubelet.conf",
    "var/lib/rancher/k3s/agent",
    "var/lib/rancher/rke2/agent",
)
SLURM_ENV = ("SLURMD_NODENAME", "SLURM_CONF")  # slurmd sets the first for its programs
KUBERNETES_ENV = ("KUBERNETES_SERVICE_HOST", "NODE_NAME")  # a pod; NODE_NAME: downward API


@frozen
class Site:
    """The node a run judged, as its scheduler names it, and which schedulers it shows."""

    node: str | None = None  # None: no name read (the placeholder stays)
    slurm: bool = False
    kubernetes: bool = False

    def drain(self, why: str) -> str:
        """The drain command(s): Slurm's and/or Kubernetes', both where neither is shown.
        The reason never starts with ``dolmen:``: a drain a person runs is theirs, and the
        Slurm health check resumes only the nodes it drained itself (slurm/drain.py)."""
        node = self.node or "<node>"
        slurm = f'scontrol update nodename={node} state=drain reason="{why}"'
        kube = f"kubectl cordon {node} && kubectl drain {node} --ignore-daemonsets"
        if self.slurm and not self.kubernetes:
            return slurm
        if self.kubernetes and not self.slurm:
            return kube
        return f"Slurm: {slurm}; Kubernetes: {kube}"


def site_of(host: Host, hostname: str | None) -> Site:
    """Which schedulers ``host`` shows (files of slurmd or the kubelet, their environment)
    and the node's name: ``SLURMD_NODENAME`` or ``NODE_NAME`` where set, else ``hostname``
    (the facts' ``os.hostname``), short for Slurm (slurmd's default NodeName)."""
    try:  # a stand-in host of a test may offer neither
        env, exists = host.environ(), host.exists
    except AttributeError:
        return Site(hostname if hostname and _SAFE.fullmatch(hostname) else None)
    slurm = any(env.get(k) for k in SLURM_ENV) or any(exists(p) for p in SLURM_PATHS)
    kube = any(env.get(k) for k in KUBERNETES_ENV) or any(exists(p) for p in KUBELET_PATHS)
    node = env.get("SLURMD_NODENAME") or env.get("NODE_NAME") or None
    if node is None and hostname:
        node = hostname.split(".", 1)[0] if slurm and not kube else hostname.lower()
    return Site(node if node and _SAFE.fullmatch(node) else None, slurm, kube)


def values(
    check: str,
    subject: str,
    evidence: Mapping[str, Any],
    device: Device | None,
    site: Site | None,
) -> dict[str, str]:
    """The fields this finding knows (unsafe values left out)."""
    out: dict[str, str] = {}
    kind, _, name = subject.partition(":")
    bus = parse_subject(subject)
    if bus is not None:
        out["bdf"] = bus.sysfs
        if kind == "gpu":
            out["bus id"] = bus.nvsmi
    elif kind == "gpu" and device is not None and device.uuid:
        out["bus id"] = device.uuid
    if kind == "ib":
        dev, _, port = name.partition("/")
        out["device"] = dev
        if port:
            out["port"] = port
    elif kind == "nic":
        out["nic"] = out["netdev"] = name
    elif kind == "mount":
        out["mount"] = name
    elif kind == "lib" and name.startswith("/"):
        out["path"] = name
    netdev = evidence.get("netdev")
    if isinstance(netdev, str) and "/" not in netdev:
        out["netdev"] = netdev
    if site is not None:
        if site.node:
            out["node"] = site.node
        why = f"{_UNSAFE.sub('_', check)} on {_UNSAFE.sub('_', subject)}"
        out["drain"] = site.drain(why[:80])
    return {k: v for k, v in out.items() if k == "drain" or _SAFE.fullmatch(v)}


def unbundled(summary: str) -> str | None:
    """The remedy of an unknown whose summary says its source was ``not in this bundle``
    (a paste, a tree that did not record that part): what to add, never the fault's fix,
    since nothing was found wrong. None where the summary names no missing source."""
    if NOT_IN_BUNDLE not in summary:
        return None
    named: list[str] = []
    for part in summary.split(NOT_IN_BUNDLE)[1:]:  # "...: not in this bundle: <what>; ..."
        what = part[2:].split(";")[0].strip() if part.startswith(": ") else ""
        while what.endswith(")") and what.count(")") > what.count("("):  # "(not in ...: x)"
            what = what[:-1].rstrip()
        if what and what not in named:
            named.append(what)
    what = "; ".join(named) if named else "what this check reads"
    return (
        f"Give dolmen {what}: add it to the bundle, run dolmen on the host, or take "
        "`dolmen snapshot -o FILE` there (it holds every source) and --from that file."
    )


def needs_site(text: str) -> bool:
    """Whether a remedy names the node (so the run must find out which it is)."""
    return "<node>" in text or "<drain>" in text


def fill(text: str, known: Mapping[str, str]) -> str:
    """``text`` with each field of ``known`` put in; the others stay as written."""
    if "<" not in text:
        return text
    return _FIELD.sub(lambda m: known.get(m[1], m[0]), text)
