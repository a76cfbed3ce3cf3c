"""The OS and data volumes are encrypted at rest with LUKS2 (advisory posture).

DGX OS encrypts the OS and the NVMe data drives; a stolen or returned drive (RMA) then
holds no readable model weights or data sets. A mount whose stack (sysfs slaves from the
mounted device down to its disks) holds a dm-crypt mapping is encrypted; one read to its
disks without any is not; one that could not be followed is unknown, naming the source.
"""

from __future__ import annotations

from typing import Any, cast

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, unknown, warned
from dolmen.facts.crypt.model import CryptFacts

REMEDY = (
    "Encrypt it with LUKS2 (cryptsetup reencrypt --encrypt --type luks2 --reduce-device-size "
    "32M <device> encrypts in place, after a backup; or cryptsetup luksFormat --type luks2 "
    "on an empty drive), then bind an unlock method: `dolmen crypt enrol <device> --provider "
    "vault|pkcs11` (docs/crypt.md), systemd-cryptenroll --tpm2-device=auto, or Clevis."
)


@check(
    "security.encryption.volumes",
    title="The OS and data volumes are on LUKS2 (dm-crypt)",
    level=Level.STANDARD,
    needs=("crypt",),
    remedy=REMEDY,
    source="DGX OS: full-disk encryption of the OS and data drives; cryptsetup dm uuid format",
    gating=False,
)
def volumes(ctx: Context) -> list[Outcome]:
    """Follows each OS and data mount down its block-device stack (sysfs) to dm-crypt."""
    facts = cast(CryptFacts, ctx.facts("crypt"))
    if not facts.volumes:
        why = facts.unread.get("volumes", "no OS or data mount in the mount table")
        return [unknown("host", f"the mounts could not be read: {why}", reason=why)]
    out: list[Outcome] = []
    for v in facts.volumes:
        ev: dict[str, Any] = {
            "role": v.role,
            "device": v.source,
            "stack": [la.name for la in v.layers],
        }
        crypt = v.crypt
        if v.encrypted is None:
            out.append(unknown(v.subject, f"what holds it could not be read: {v.reason}", **ev))
        elif crypt is None:
            disks = ", ".join(v.disks) or v.source
            out.append(warned(v.subject, f"{v.role} volume is not encrypted (on {disks})", **ev))
        elif crypt.crypt_type != "LUKS2":
            what = f"dm-crypt {crypt.crypt_type}"
            ev["luks_uuid"] = crypt.luks_uuid
            out.append(warned(v.subject, f"{what}, not LUKS2: no tokens, no key binding", **ev))
        else:
            ev["luks_uuid"] = crypt.luks_uuid
            name = crypt.dm_name or crypt.name
            out.append(passed(v.subject, f"{v.role} volume on LUKS2 ({name})", **ev))
    return out
