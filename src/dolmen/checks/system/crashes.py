"""Kernel crashes: panics, Oopses and BUGs in the kernel log, and the crash records an
earlier boot left in pstore.

GPUd's os component records a kernel panic as an event and sets no health state: with
``kernel.panic`` > 0 the host rebooted itself, and the boot after it may be healthy.
dolmen follows it: a crash warns (the node is degraded, a person decides whether to
drain a node that crashes again), it never fails on one record. An Oops leaves the
running kernel tainted, so its remedy is a reboot at the next drain. The severities are
the ``panic`` and ``oops`` rows of kb/data/xids.toml, which ``logs scan`` reads too.
"""

from __future__ import annotations

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown
from dolmen.checks.system.log_window import split_events, when, worst
from dolmen.facts.kernel_log import KernelEvent

CRASHES = ("panic", "oops")
_REMEDY = (
    "Read the crash's call trace (dmesg, or the pstore record), check kernel and driver "
    "versions against known issues, and reboot a kernel that Oopsed at the next drain; "
    "drain the node (<drain>) if it crashes again."
)


@check(
    "system.kernel_panic",
    title="No kernel panic, Oops or BUG in the kernel log's recent past",
    level=Level.QUICK,
    needs=("kernel_log", "os"),
    remedy=_REMEDY,
    limits={"window_hours": 24},
    source=(
        "GPUd os component (kernel_panic is an event, no health state): warn, never fail; "
        "kb/data/xids.toml [[event]] panic, oops"
    ),
)
def kernel_panic(ctx: Context) -> list[Outcome]:
    """Reads the kernel log's panic and Oops/BUG events and the uptime (the window)."""
    split = split_events(ctx, CRASHES)
    if isinstance(split, Outcome):
        return [split]
    if not split.recent:
        what = f"{len(split.older)} older than the window" if split.older else "none"
        return [passed("host", f"no kernel panic, Oops or BUG in the window ({what})")]
    last = split.recent[-1]
    panics = sum(e.kind == "panic" for e in split.recent)
    oopses = len(split.recent) - panics
    counts = ", ".join(
        [f"{panics} panic(s)"] * bool(panics) + [f"{oopses} Oops/BUG line(s)"] * bool(oopses)
    )
    summary = f"{counts} in the kernel log, last {when(last)}: {_what(last)}"
    return [Outcome(worst(ctx, split.recent), "host", summary, None, split.evidence())]


@check(
    "system.pstore",
    title="No crash record of an earlier boot in pstore (kernel panic or Oops)",
    level=Level.STANDARD,  # advisory: quick is what can make a node unhealthy
    needs=("kernel_log", "os"),
    remedy=_REMEDY + " Remove the read records (sys/fs/pstore, var/lib/systemd/pstore) after.",
    limits={"window_hours": 168},
    gating=False,  # warns at most; most bundles and non-root runs cannot read pstore
    source=(
        "GPUd pstore reader (pkg/pstore) and os component: a previous boot's panic is an "
        "event, no health state; window: dolmen (a week)"
    ),
)
def pstore(ctx: Context) -> list[Outcome]:
    """Reads the pstore crash records (their events) and the uptime (the window)."""
    log = ctx.kernel_log
    if log.pstore is None:
        why = log.unread.get("pstore", "not read")
        if why.startswith(("not in this bundle", "not supported")):
            return [skipped("host", why)]
        return [unknown("host", f"pstore records could not be read: {why}")]
    if not log.pstore:
        files = len(log.pstore_files)
        return [passed("host", f"no panic or Oops in pstore ({files} record file(s) read)")]
    split = split_events(ctx, CRASHES, events=log.pstore)
    assert not isinstance(split, Outcome)
    records = sorted({e.device for e in log.pstore if e.device})
    ev = split.evidence(log.pstore) | {"records": records}
    if not split.recent:
        msg = f"the last crash record in pstore is older than the window ({when(split.older[-1])})"
        return [passed("host", msg, **ev)]
    last = split.recent[-1]
    summary = f"this host crashed before the current boot ({when(last)}): {_what(last)}"
    return [Outcome(worst(ctx, split.recent), "host", summary, None, ev)]


def _what(ev: KernelEvent) -> str:
    return ev.message.strip()[:160]  # "Kernel panic - not syncing: ...", "Oops: ...", "BUG: ..."
