"""``tuning.*`` checks: drift from the active dolmen tune profile, and the posture that the
DGX OS, NVIDIA TuneD and mlnx_tune profiles set (governor, THP, NUMA balancing, persistence
mode, huge pages, irqbalance, memlock, a kernel command line waiting for a reboot).

All advisory (``gating=False``): a host tuned otherwise is not broken. A value the facts
could not read is ``skip`` when the platform does not offer it (``not supported``: a VM
without cpufreq) and ``unknown`` otherwise (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.checks.model import Outcome, skipped, unknown
from dolmen.host import NOT_IN_BUNDLE

REMEDY_PROFILE = "Apply a profile that sets it (`dolmen tune recommend`, then `dolmen tune apply`)."


def not_read(unread: Mapping[str, str], key: str, what: str, subject: str = "host") -> Outcome:
    """``skip`` (not supported, deprecated, not in this bundle: an advisory check has nothing
    to advise on) or ``unknown`` for a value the facts lack."""
    why = unread.get(key) or "missing: no value and no reason in the facts"
    if why.startswith(("not supported", "deprecated", NOT_IN_BUNDLE)):
        return skipped(subject, f"{what}: {why}", reason=why)
    return unknown(subject, f"{what} could not be read: {why}", reason=why)
