"""Every NVMe drive of the node is encrypted at rest (advisory posture).

An AI node's NVMe drives hold the data sets, checkpoints and model weights; DGX OS
encrypts them as well as the OS. Each drive is named: its partitions (or the whole drive)
must each be a LUKS device or sit under a dm-crypt mapping. /boot and the EFI partition are
left aside (the firmware reads them). An unused drive without a LUKS header is plain too.
"""

from __future__ import annotations

from typing import Any, cast

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.checks.security.encryption import REMEDY
from dolmen.facts.crypt.model import CryptFacts


@check(
    "security.encryption.nvme",
    title="Every NVMe drive is LUKS-encrypted",
    level=Level.STANDARD,
    needs=("crypt",),
    remedy=REMEDY,
    source="DGX OS: NVMe data drives encrypted with keys held in Vault or an HSM",
    gating=False,
)
def nvme(ctx: Context) -> list[Outcome]:
    """Reads each NVMe namespace's partitions for a LUKS header or a dm-crypt holder."""
    facts = cast(CryptFacts, ctx.facts("crypt"))
    if not facts.nvme:
        why = facts.unread.get("nvme")
        if why:
            return [unknown("host", f"the block devices could not be listed: {why}", reason=why)]
        return [skipped("host", "no NVMe drive")]
    out: list[Outcome] = []
    for d in facts.nvme:
        ev: dict[str, Any] = {"parts": list(d.parts), "mounts": list(d.mounts)}
        held = f" (holds {', '.join(d.mounts)})" if d.mounts else ""
        if d.encrypted is None:
            out.append(unknown(d.subject, f"LUKS header could not be read: {d.reason}", **ev))
        elif d.encrypted:
            out.append(passed(d.subject, f"encrypted{held}", **ev))
        else:
            plain = ", ".join(d.plain)
            out.append(
                warned(d.subject, f"not encrypted: {plain}{held}", plain=list(d.plain), **ev)
            )
    return out
