"""LUKS headers: LUKS2 with a strong cipher and a memory-hard KDF (advisory posture).

Read from the devices each open dm-crypt mapping came from, and from every NVMe
partition. ``cipher_null`` is no encryption at all (cryptsetup accepts it); a key below
256 bits in XTS (two halves: 128-bit AES) is below what DGX OS and NIST SP 800-38E
recommend; PBKDF2 keyslots are cheaper to brute-force than Argon2id ones (cryptsetup's
default since 2.4).
"""

from __future__ import annotations

from typing import Any, cast

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, passed, skipped, unknown, warned
from dolmen.facts.crypt.luks2 import NOT_LUKS
from dolmen.facts.crypt.model import CryptFacts


def none_read(facts: CryptFacts) -> Outcome:
    """No LUKS header on a host whose volumes and drives were all read is a skip; where one
    could not be read, the header may be on it: unknown."""
    blind = [v.subject for v in facts.volumes if v.encrypted is None]
    blind += [d.subject for d in facts.nvme if d.encrypted is None]
    blind += [f"{k}: {v}" for k, v in facts.unread.items()]
    if blind or not facts.volumes:
        return unknown("host", f"no LUKS header read; not read: {', '.join(blind) or 'mounts'}")
    return skipped("host", "no LUKS device on this host")


def devices(ctx: Context) -> tuple[CryptFacts, list[Outcome]]:
    facts = cast(CryptFacts, ctx.facts("crypt"))
    out = [
        unknown(d.subject, f"LUKS header could not be read: {d.reason}", reason=d.reason)
        for d in facts.luks
        if d.header is None and d.reason != NOT_LUKS
    ]
    return facts, out


@check(
    "security.luks.header",
    title="LUKS devices are LUKS2 with a real cipher, a 512-bit XTS key and Argon2id keyslots",
    level=Level.STANDARD,
    needs=("crypt",),
    remedy=(
        "LUKS1: cryptsetup convert --type luks2 <device> (after luksHeaderBackup). A weak "
        "cipher or key: cryptsetup reencrypt --cipher aes-xts-plain64 --key-size 512 <device>. "
        "PBKDF2 keyslots: cryptsetup luksConvertKey --pbkdf argon2id <device>."
    ),
    limits={"min_key_bits": 512},
    source="cryptsetup 2.4+ defaults (aes-xts-plain64, 512-bit key, argon2id); NIST SP 800-38E",
    gating=False,
)
def header(ctx: Context) -> list[Outcome]:
    """Reads each LUKS header's version, segment cipher, key size and keyslot KDFs."""
    facts, out = devices(ctx)
    least = int(ctx.limit("min_key_bits"))
    for d in facts.luks:
        h = d.header
        if h is None:
            continue
        ev: dict[str, Any] = {
            "uuid": h.uuid,
            "version": h.version,
            "cipher": h.cipher,
            "key_bits": h.key_bits,
        }
        weak = [s.slot for s in h.keyslots if s.kdf == "pbkdf2"]
        if h.version != 2:
            out.append(warned(d.subject, f"LUKS{h.version}: no tokens, PBKDF2 only", **ev))
        elif h.cipher is None or "null" in h.cipher:
            out.append(warned(d.subject, f"cipher {h.cipher}: the data is not encrypted", **ev))
        elif h.key_bits is not None and h.key_bits < least:
            out.append(warned(d.subject, f"{h.key_bits}-bit key, below {least}", **ev))
        elif weak:
            slots = ", ".join(map(str, weak))
            out.append(warned(d.subject, f"PBKDF2 keyslot(s) {slots}", pbkdf2_slots=weak, **ev))
        else:
            out.append(passed(d.subject, f"LUKS2 {h.cipher}, {h.key_bits}-bit key", **ev))
    return out or [none_read(facts)]
