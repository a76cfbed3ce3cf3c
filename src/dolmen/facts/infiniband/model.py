"""The InfiniBand / RoCE model: one HCA port, and the facts of a host's ports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from dolmen.frozen import frozen

# Where a port was read, best first: when two sources show the same port, the first wins.
SOURCES = ("sysfs", "ibstat", "ibstatus", "ibv_devinfo")


@frozen
class IbPort:
    """One HCA port (``ib:<device>/<port>``), with its device's identity repeated for checks."""

    device: str  # mlx5_0, mlx5_bond_0, hfi1_0
    port: int
    state: str | None  # ACTIVE, DOWN, INIT, ARMED, ACTIVE_DEFER
    phys_state: str | None  # LinkUp, Polling, Disabled, Sleep, LinkErrorRecovery, ...
    rate_gbps: float | None  # 400.0
    rate_text: str | None  # "400 Gb/sec (4X NDR)" (sysfs), "400" (ibstat)
    link_layer: str | None  # InfiniBand, Ethernet (RoCE)
    lid: int | None = None
    fw_version: str | None = None
    hca_type: str | None = None  # MT4129 = ConnectX-7 (ibv_devinfo's vendor_part_id 4129)
    board_id: str | None = None
    node_guid: str | None = None  # 16 lowercase hex digits
    pci_bdf: str | None = None
    counters: Mapping[str, int] = field(default_factory=dict)
    source: str = "sysfs"  # one of SOURCES
    # Lanes the link trained to ("4X"): from the sysfs rate text or ibv_devinfo -v; None
    # where the source does not say (ibstat prints the rate alone).
    active_width: str | None = None

    @property
    def subject(self) -> str:
        """The finding subject: ``ib:mlx5_0/1``."""
        return f"ib:{self.device}/{self.port}"


@frozen
class InfinibandFacts:
    """HCA ports from every source that showed one.

    ``unread`` keys: ``<device>/<port>.<field>``, ``<device>.<field>``, a command
    (``ibstat``, ``ibstatus``, ``ibv_devinfo``), and ``ports`` when no source showed a
    port (why: ``missing`` where the host vouches there is none, ``not in this bundle``
    where the bundle did not record the sources). ``lost_devices`` maps a device a tool
    listed but could not read (ibstat's ``stat of IB device 'mlx5_8' failed``: the HCA
    vanished) to the tool's words. ``read`` names the sources that answered.
    """

    ports: tuple[IbPort, ...] = ()
    ibstat: tuple[IbPort, ...] = ()  # ibstat's view, when it ran
    disagreements: tuple[str, ...] = ()  # sysfs and ibstat differ (one line each)
    unread: Mapping[str, str] = field(default_factory=dict)
    lost_devices: Mapping[str, str] = field(default_factory=dict)
    read: tuple[str, ...] = ()
