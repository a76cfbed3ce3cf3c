"""kernel_log facts: the events of the kernel log (Xids, SXids, link flaps, PCIe errors).

Read: ``dmesg --time-format iso --decode``, else plain ``dmesg``, else
``journalctl -k -o short-iso --no-pager -b``, always under the tree key
``commands/dmesg`` (``host.run(argv, key="dmesg")``): a host tree holds the
kernel log there whatever command ran live. Parse: ``scan_kernel_log(text)``,
pure and linear (``scan``); any format of ``lines`` is accepted, line by line;
``events`` and ``system_events`` name what a record reports; ``model`` holds the
dataclasses. A tree's ``commands/dmesg`` is streamed (``Host.read_chunks``, then
``stream.text_blocks``): a bundle's log of millions of lines is read in one pass,
in bounded memory, never held whole. ``pstore`` reads the crash records an earlier
boot left (``sys/fs/pstore``), whether or not the log itself could be read.

``dmesg`` refused to a non-root user (``kernel.dmesg_restrict``) is
``unread["events"] = "insufficient permissions: ..."``, never an empty log.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from dolmen.facts.kernel_log.model import KernelEvent, KernelLogFacts, LogRecord
from dolmen.facts.kernel_log.pstore import read_pstore
from dolmen.facts.kernel_log.scan import scan_blocks, scan_kernel_log
from dolmen.facts.kernel_log.stream import text_blocks
from dolmen.host import NOT_IN_BUNDLE, CommandResult, Host, RunStatus

__all__ = [
    "ATTEMPTS",
    "KernelEvent",
    "KernelLogFacts",
    "LogRecord",
    "collect",
    "scan_kernel_log",
]

TREE_KEY = "dmesg"  # commands/dmesg in a host tree: a contract with `dolmen snapshot`
ATTEMPTS: tuple[tuple[str, ...], ...] = (
    ("dmesg", "--time-format", "iso", "--decode"),
    ("dmesg",),  # busybox and util-linux < 2.27 know neither option
    ("journalctl", "-k", "-o", "short-iso", "--no-pager", "-b"),
)
_DENIED = ("Operation not permitted", "Permission denied", "not seeing messages")


def collect(host: Host, *, now: datetime | None = None) -> KernelLogFacts:
    """Read the kernel log of ``host`` and scan it, and its pstore records (see module
    docstring)."""
    now = now or datetime.now()
    facts = _streamed(host, now) if host.kind != "live" else None
    if facts is None:
        facts = _run(host, now)
    pstore, files, why = read_pstore(host)
    unread = {**facts.unread, **({"pstore": why} if why else {})}
    return replace(facts, pstore=pstore, pstore_files=files, unread=unread)


def _streamed(host: Host, now: datetime) -> KernelLogFacts | None:
    """A tree's ``commands/dmesg`` read in one streamed pass; None when it is not a plain
    recorded success (absent, a failed command, not a file): ``_run`` then says why."""
    rel = f"commands/{TREE_KEY}"
    rc = host.read_opt(rel + ".rc")
    try:
        if (rc is not None and rc.strip() != "0") or not host.exists(rel) or host.is_dir(rel):
            return None
    except OSError:  # a link loop, no permission: host.run says it as a failure
        return None
    try:
        facts = scan_blocks(text_blocks(host.read_chunks(rel)), source=rel, now=now)
    except OSError as e:
        return KernelLogFacts(unread={"events": f"unreadable: {rel}: {e.strerror or e}"})
    if _denied(host.read_opt(rel + ".err") or "") and facts.format in (None, "raw"):
        return None  # a refusal recorded as output (journalctl's "-- No entries --"): small
    return facts


def _run(host: Host, now: datetime) -> KernelLogFacts:
    failures: list[CommandResult] = []
    for argv in ATTEMPTS:
        result = host.run(argv, key=TREE_KEY, timeout=30)
        if result.ok:
            # A tree does not say which command filled commands/dmesg: name the file.
            source = " ".join(argv) if host.kind == "live" else f"commands/{TREE_KEY}"
            facts = scan_kernel_log(result.stdout, source=source, now=now)
            # journalctl exits 0 and prints "-- No entries --" to a user outside the adm and
            # systemd-journal groups: that is a refusal, not an empty log.
            if not (_denied(result.stderr) and facts.format in (None, "raw")):
                return facts
        failures.append(result)
        if result.status in (RunStatus.MISSING, RunStatus.UNRECORDED) and host.kind != "live":
            break  # a tree has one kernel log (commands/dmesg): no other command to try
    return KernelLogFacts(unread={"events": _reason(failures)})


def _denied(stderr: str) -> bool:
    return any(word in stderr for word in _DENIED)


def _reason(failures: list[CommandResult]) -> str:
    for r in failures:
        if r.status is RunStatus.DENIED or _denied(r.stderr):
            denied = r.failure("insufficient permissions")
            return f"{denied} (kernel.dmesg_restrict: run as root)"
    for status in (RunStatus.TIMEOUT, RunStatus.FAILED):
        for r in failures:
            if r.status is status:
                return r.failure()
    last = failures[-1] if failures else None
    if last is not None and last.status is RunStatus.UNRECORDED:
        # A bundle without commands/dmesg says nothing of the host's log: name the file,
        # not whichever command a live host would have tried last.
        return f"{NOT_IN_BUNDLE}: the kernel log (commands/{TREE_KEY})"
    return f"missing: {last.describe() if last else 'no command to read the kernel log'}"
