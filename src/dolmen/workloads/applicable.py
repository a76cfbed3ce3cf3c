"""``NotApplicable``: a workload that has nothing to run on here, as opposed to one that
could not run (``Unavailable``, which the checks report as unknown on a live host).

One GPU has no collective, a host without dcgmi has no DCGM diagnostic, a workstation
without a data mount has no storage to test: the checks skip these, with the reason.
"""

from __future__ import annotations

from dolmen.workloads.model import Unavailable


class NotApplicable(Unavailable):
    """The workload does not apply to this host (the check skips with ``reason``)."""
