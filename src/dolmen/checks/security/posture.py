"""How advisory posture checks answer when the facts could not read a signal.

A posture file that is absent is ``unknown`` with the facts' reason (a VM without
EFI, TPM or a mounted securityfs); only a reason the facts mark ``not supported``
(the kernel lacks the feature) is ``skip``, as docs/architecture.md says.
"""

from __future__ import annotations

from dolmen.checks.model import Outcome, skipped, unknown


def unread(subject: str, what: str, reason: str | None) -> Outcome:
    """``unknown`` (or ``skip`` for "not supported") for a signal the facts could not read."""
    why = reason or "missing: no value and no reason in the facts"
    if why.startswith("not supported"):
        return skipped(subject, f"{what}: {why}", reason=why)
    return unknown(subject, f"{what} could not be read: {why}", reason=why)
