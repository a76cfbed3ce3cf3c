"""``security.rdma.netns_exclusive``: RDMA devices are bound to one network namespace.

In the kernel's default ``shared`` mode a job or container in its own network namespace
still sees every HCA of the host, and through them every InfiniBand partition the ports
are members of: the netns isolation of the jobs stops at the RDMA devices. ``exclusive``
binds each device to one namespace (dolmen.net.rdma). Advisory: the mode only matters
where jobs of several tenants share a node.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, unknown, warned
from dolmen.net.rdma import read_netns_mode


@check(
    "security.rdma.netns_exclusive",
    title="RDMA devices are isolated per network namespace (rdma netns mode exclusive)",
    level=Level.STANDARD,
    remedy=(
        "Set the mode at boot: options ib_core netns_mode=0 in /etc/modprobe.d/ib_core.conf "
        "(then update-initramfs -u and reboot), or now, while no other network namespace "
        "exists: rdma system set netns exclusive; then move each device into its job's "
        "namespace: rdma dev set <device> netns <ns>."
    ),
    source=(
        "iproute2 rdma-system(8); kernel ib_core netns_mode; NVIDIA InfiniBand security "
        "guidance (isolate RDMA devices per tenant)"
    ),
    gating=False,
)
def netns_exclusive(ctx: Context) -> list[Outcome]:
    """Runs ``rdma system show`` (iproute2) and reads its ``netns`` word."""
    mode, said = read_netns_mode(ctx.host)
    if mode is None:
        return [unknown("host", f"the RDMA netns mode could not be read: {said}", reason=said)]
    if mode == "exclusive":
        return [passed("host", "RDMA netns mode is exclusive", output=said)]
    return [
        warned(
            "host",
            "RDMA netns mode is shared: every network namespace sees every RDMA device",
            output=said,
        )
    ]
