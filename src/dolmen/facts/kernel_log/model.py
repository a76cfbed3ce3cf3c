"""The kernel-log model: records (a line and its continuation lines), events, the facts.

All ``@frozen`` (methods compiled ahead of time, dolmen.frozen): ``@dataclass(slots=True)``
wrote and compiled its methods and built a second class at every import, 3 ms of each
quick run. Without slots a record holds a ``__dict__``; records are streamed one at a time
(``scan``) and the events kept are bounded, so that costs no memory worth the start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from datetime import datetime

from dolmen.frozen import frozen

FABRIC_MANAGER = "fabricmanager"  # LogRecord.fmt of nv-fabricmanager's log lines (lines.py)


@frozen
class LogRecord:
    """One kernel-log record (a line and its continuation lines)."""

    line_no: int  # 1-based number of its first line
    fmt: str
    message: str
    raw: str
    time: datetime | None = None
    boot_seconds: float | None = None
    clock: str = "none"  # absolute | local | boot | yearless | none
    facility: str | None = None
    level: str | None = None
    program: str | None = None  # "kernel", "systemd-networkd"... when the line names one


@frozen
class KernelEvent:
    """One event found in a kernel-log record.

    ``kind``: xid | sxid | fell_off_bus | ib_flap | pcie_limited | aer | aer_corrected |
    peermem | api_mismatch | io_error (``device`` the disk, ``detail`` what failed) |
    panic (``detail`` the reason) | oops (``detail`` the "Oops: ..." or "BUG: ..." text) |
    oom_kill (``pid``/``process`` the victim, ``detail`` "system" or "memcg", ``device`` the
    constraint) | segfault (``device`` the library it crashed in) | file_max (``detail``
    the limit) | driver_loaded (nvidia.ko loading at that boot: ``detail`` its version,
    ``device`` open or proprietary) | nvswitch (``device`` an NVSwitch the driver opened:
    it exists). ``ib_flap`` is any link's carrier or link state,
    ``detail`` "down" (a loss) or "up" (gained carrier, Link up, NIC Link is Up),
    ``interface`` its name. In ``KernelLogFacts.pstore`` events, ``device`` is the pstore
    record the event came from.
    ``xid`` holds the Xid or SXid number; ``bus_id`` the device in ``0000:38:00.0`` form;
    ``fatal`` the line's own Fatal/Non-fatal word; ``detail`` what else the line says
    (the link state "down"/"up", Xid 154's new action, the PCIe limit, the versions).
    """

    kind: str
    line_no: int
    message: str
    raw: str
    time: datetime | None = None
    boot_seconds: float | None = None
    clock: str = "none"
    bus_id: str | None = None
    xid: int | None = None
    pid: int | None = None
    process: str | None = None
    device: str | None = None  # nvidia-nvswitchN, the reporting driver
    interface: str | None = None
    fatal: bool | None = None
    recovery: int | None = None  # Xid 154: the new recovery action code (0 = none)
    detail: str | None = None


@frozen
class KernelLogFacts:
    """The kernel log of a host: where it came from, its span, and its events.

    ``events`` is None when the log could not be read (``unread["events"]`` says why).
    ``first_time``/``last_time`` are the wall-clock span when the lines carry one;
    ``first_boot_seconds``/``last_boot_seconds`` the span in seconds since boot.
    ``events_dropped``: older events of a flood not kept (``scan.BoundedEvents``).
    ``pstore``: the events of the crash records an earlier boot left (``pstore``), None when
    they could not be looked for (``unread["pstore"]`` says why); ``pstore_files`` the
    records read.
    """

    source: str | None = None  # the command whose output this is
    format: str | None = None  # the dominant line format (dolmen.facts.kernel_log.lines)
    lines: int = 0
    events: tuple[KernelEvent, ...] | None = None
    first_time: datetime | None = None
    last_time: datetime | None = None
    first_boot_seconds: float | None = None
    last_boot_seconds: float | None = None
    events_dropped: int = 0
    driver_gpus: tuple[str, ...] = ()
    pstore: tuple[KernelEvent, ...] | None = None
    pstore_files: tuple[str, ...] = ()
    unread: Mapping[str, str] = field(default_factory=dict)

    @property
    def fabric_manager(self) -> bool:
        """Whether this is nv-fabricmanager's own log (its dominant line format), pasted where
        the kernel log goes: it holds the fabric manager's NVSwitch errors, no kernel record."""
        return self.format == FABRIC_MANAGER
