"""The RDMA subsystem's network-namespace mode, from ``rdma system show`` (iproute2).

In ``shared`` mode (the kernel's default) every RDMA device is visible from every network
namespace: a container or a job confined to its own netns still opens the HCAs of the
host and can reach every partition their ports are members of. ``exclusive`` binds each
device to one namespace (``rdma dev set <dev> netns <ns>``), which is what NVIDIA's
InfiniBand security guidance and the container runtimes' RDMA isolation assume. The mode
is set by ``rdma system set netns exclusive`` (only while no other netns exists) or at
module load with ``ib_core netns_mode=0``; it does not survive a reboot otherwise.

The output has grown with iproute2's releases; every form is ``key value`` pairs:

    netns shared                                          (iproute2 5.3)
    netns shared copy-on-fork on                          (5.12)
    netns exclusive privileged-qkey off copy-on-fork on   (6.7)

A kernel without RDMA (no ib_core) answers ``Failed to open NETLINK_RDMA socket``.
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.host import Host, RunStatus
from dolmen.host.command import NOT_IN_BUNDLE

ARGV = ("rdma", "system", "show")
MODES = ("shared", "exclusive")
NO_NETLINK = "Failed to open NETLINK_RDMA socket"


def parse_rdma_system(text: str) -> Mapping[str, str] | None:
    """The ``key value`` pairs of ``rdma system show``; None unless ``netns`` is one of
    ``MODES`` (junk, a truncated line, a tool that printed something else)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1:
        return None
    words = lines[0].split()
    if len(words) % 2:
        return None
    pairs = dict(zip(words[::2], words[1::2], strict=True))
    return pairs if pairs.get("netns") in MODES else None


def read_netns_mode(host: Host) -> tuple[str | None, str]:
    """The host's mode (``shared``/``exclusive``) and the command's line, or None and why
    it could not be read, in the reason words of docs/architecture.md."""
    res = host.run(list(ARGV), timeout=5)
    if res.status is RunStatus.UNRECORDED:
        return None, f"{NOT_IN_BUNDLE}: {' '.join(ARGV)}"
    if res.status is RunStatus.MISSING:  # live: not on PATH; a hand-made tree: not recorded
        return None, res.failure()
    if NO_NETLINK in res.stdout + res.stderr:
        return None, "missing: this kernel has no RDMA (no RDMA netlink: ib_core is not loaded)"
    if not res.ok:
        return None, res.failure()
    attrs = parse_rdma_system(res.stdout)
    if attrs is None:
        return None, f"malformed: {' '.join(ARGV)}: {res.stdout.strip()[:80]!r}"
    return attrs["netns"], res.stdout.strip()
