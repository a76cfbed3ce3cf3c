"""LUKS2 devices carry an unlock binding: a TPM2, Clevis or dolmen token (advisory posture).

A LUKS2 device with no token unlocks only with a typed passphrase: a node that reboots
unattended stays down, and someone types the passphrase on a console. systemd-cryptenroll
writes ``systemd-tpm2`` (and ``-fido2``, ``-pkcs11``) tokens, Clevis ``clevis`` ones, and
``dolmen crypt enrol`` a ``dolmen`` token holding a key wrapped by Vault or an HSM.
"""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, warned
from dolmen.checks.security.luks_header import devices, none_read
from dolmen.facts.crypt.luks2 import DOLMEN_TOKEN


@check(
    "security.luks.binding",
    title="LUKS2 devices unlock without a typed passphrase (TPM2, Clevis or dolmen token)",
    level=Level.STANDARD,
    needs=("crypt",),
    remedy=(
        "Bind a key: `dolmen crypt enrol <device> --provider vault|pkcs11` (keys in Vault or "
        "an HSM, docs/crypt.md), systemd-cryptenroll --tpm2-device=auto --tpm2-pcrs=7 "
        "<device>, or clevis luks bind -d <device> tang '{\"url\": ...}'."
    ),
    source="systemd-cryptenroll token types (systemd-tpm2, systemd-fido2, systemd-pkcs11); "
    "Clevis LUKS2 token 'clevis'",
    gating=False,
)
def binding(ctx: Context) -> list[Outcome]:
    """Reads each LUKS2 header's tokens."""
    facts, out = devices(ctx)
    for d in facts.luks:
        h = d.header
        if h is None or h.version != 2:
            continue
        ev: dict[str, Any] = {
            "uuid": h.uuid,
            "tokens": list(h.token_types),
            "keyslots": len(h.keyslots),
        }
        kinds = [
            w
            for w, on in (
                ("TPM2", h.tpm2),
                ("Clevis", h.clevis),
                ("dolmen", DOLMEN_TOKEN in h.token_types),
            )
            if on
        ]
        if kinds:
            out.append(passed(d.subject, f"bound: {', '.join(kinds)}", **ev))
        elif h.tokens:
            out.append(passed(d.subject, f"tokens: {', '.join(h.token_types)}", **ev))
        else:
            out.append(warned(d.subject, "passphrase keyslots only, no token", **ev))
    return out or [none_read(facts)]
