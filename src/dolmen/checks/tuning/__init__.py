"""``tuning.*`` checks: drift from the active dolmen tune profile, and the posture that the
DGX OS, NVIDIA TuneD and mlnx_tune profiles set (governor, THP, NUMA balancing, persistence
mode, huge pages, irqbalance, memlock, a kernel command line waiting for a reboot).

All advisory (``gating=False``): a host tuned otherwise is not broken. A value the facts
could not read is ``skip`` when the platform does not offer it (``not supported``: a VM
without cpufreq) and ``unknown`` otherwise (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from dolmen.checks.model import Outcome, skipped, unknown
from dolmen.host import NOT_IN_BUNDLE

if TYPE_CHECKING:
    from dolmen.facts.numa import NumaFacts

REMEDY_PROFILE = "Apply a profile that sets it (`dolmen tune recommend`, then `dolmen tune apply`)."


def not_read(unread: Mapping[str, str], key: str, what: str, subject: str = "host") -> Outcome:
    """``skip`` (not supported, deprecated, not in this bundle: an advisory check has nothing
    to advise on) or ``unknown`` for a value the facts lack."""
    why = unread.get(key) or "missing: no value and no reason in the facts"
    if why.startswith(("not supported", "deprecated", NOT_IN_BUNDLE)):
        return skipped(subject, f"{what}: {why}", reason=why)
    return unknown(subject, f"{what} could not be read: {why}", reason=why)


def single_node(numa: NumaFacts, why_moot: str) -> Outcome | None:
    """None on a host of several NUMA nodes; else ``skip`` saying ``why_moot`` (one node, or a
    kernel without NUMA), or ``not_read`` when the nodes were not read (a bundle without
    sys/devices/system/node says nothing of how many the host has)."""
    nodes = len(numa.nodes)
    if nodes > 1:
        return None
    why = numa.unread.get("nodes", "")
    if not nodes and why and not why.startswith("not supported"):
        return not_read(numa.unread, "nodes", "NUMA nodes")
    return skipped("host", f"{nodes or 'no'} NUMA node(s): {why_moot}")
