"""NVMe controllers: each one live, and as many as the site expects.

``sys/class/nvme/nvmeX/state`` is the driver's controller state: ``live`` is usable;
``resetting`` and ``connecting`` are passing through recovery (a controller that
keeps resetting is failing), ``dead`` and ``deleting`` are gone until a reboot or a
rescan. A drive that vanished from the bus is simply missing, hence the count.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.reading import unrecorded

_TRANSIENT = frozenset({"resetting", "connecting", "new"})


@check(
    "storage.nvme",
    title="Every NVMe controller is live, and as many as expected are present",
    level=Level.QUICK,
    needs=("storage",),
    remedy=(
        "Read the drive's health (nvme smart-log /dev/nvmeX: critical_warning, media_errors, "
        "percentage_used) and dmesg for nvme timeouts/resets; reseat or replace the drive, "
        "then rebuild the array if it held one (mdadm --detail /dev/mdX)."
    ),
    limits={"expected_count": None},
    source="aznhc: NVMe count per VM size (8 on ND H100 v5); Linux nvme controller states",
)
def nvme(ctx: Context) -> list[Outcome]:
    """Reads each controller's state (sys/class/nvme) and counts them."""
    facts = ctx.storage
    want = ctx.limit("expected_count")
    out: list[Outcome] = []
    for c in facts.nvme:
        subject = f"nvme:{c.name}"
        ev = {"model": c.model, "firmware": c.firmware_rev, "transport": c.transport}
        if c.state is None:
            why = facts.unread.get(f"{c.name}.state", "not reported")
            out.append(unknown(subject, f"controller state unreadable: {why}", **ev))
        elif c.state == "live":
            out.append(passed(subject, f"live ({c.model or 'model unknown'})", **ev))
        elif c.state in _TRANSIENT:
            out.append(warned(subject, f"controller {c.state}: recovering, or failing", **ev))
        else:
            out.append(failed(subject, f"controller {c.state}", **ev))
    listing = facts.unread.get("nvme")
    if not facts.nvme and unrecorded(listing):  # the bundle lacks the list: count nothing
        make = unknown if want is not None else skipped
        return [make("host", f"NVMe controllers: {listing}")]
    if want is not None:
        n, expected = len(facts.nvme), int(want)
        if n < expected:
            out.append(failed("host", f"{n} NVMe controller(s), expected {expected}", found=n))
        else:
            out.append(passed("host", f"{n} NVMe controller(s), expected {expected}", found=n))
    return out or [skipped("host", "no NVMe controller, and no expected_count set")]
