"""``dolmen crypt`` enrol, unlock, rotate and recovery-key: plans from the header, then steps.

Each ``plan_*`` reads the device's header (``device.read_luks2``) and decides, refusing
what cannot be done (a dolmen token already there, no free keyslot, no token to unlock
with); each ``run_*`` is the body ``engine.apply`` runs under its audit events and header
backup. The data key is 32 random bytes from the provider (``new_data_key``); it exists in
this process only between unwrap and the cryptsetup call, which gets it through a memfd.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from dolmen.crypt.device import read_luks2
from dolmen.crypt.engine import Plan, check
from dolmen.crypt.token import dolmen_tokens, free_keyslot, make_token, parse_token
from dolmen.errors import InputError, UsageError
from dolmen.facts.crypt.luks2 import LuksHeader
from dolmen.host import Host
from dolmen.host.cryptsetup import Cryptsetup, Secret
from dolmen.keys import KeyProvider, WrappedKey

MODHEX = "cbdefghijklnrtuv"  # systemd-cryptenroll's recovery-key alphabet (no 0/O, 1/l)


def plan_enrol(header: LuksHeader, device: str, provider: str) -> Plan:
    """Enrol: a new keyslot for a fresh key, and a dolmen token holding it wrapped."""
    if dolmen_tokens(header):
        raise InputError(
            "a dolmen token is already there",
            path=device,
            hint="`dolmen crypt rotate` rewraps it; remove it first to enrol anew "
            "(cryptsetup token remove --token-id N, then luksKillSlot its keyslot)",
        )
    slot = _free(header, device)
    return Plan(
        "crypt.enrol",
        device,
        header.uuid,
        (
            f"back up the LUKS2 header of {device}",
            f"make a 256-bit key with the {provider} provider, wrapped for context {header.uuid}",
            f"add it to keyslot {slot} (luksAddKey, unlocked with --key-file)",
            f"store the wrapped key as a dolmen token bound to keyslot {slot}",
            f"verify: unwrap the token and open --test-passphrase keyslot {slot}",
        ),
        details={"provider": provider, "keyslot": slot},
    )


def run_enrol(plan: Plan, provider: KeyProvider, existing: bytes, cs: Cryptsetup) -> dict[str, Any]:
    """The steps of an enrolment (under ``engine.apply``)."""
    slot = int(plan.details["keyslot"])
    key, wrapped = provider.new_data_key(context=plan.uuid)
    check(cs.add_key(plan.device, Secret(existing), Secret(key), slot), "luksAddKey")
    check(cs.token_import(plan.device, make_token(wrapped, slot), slot), "token import")
    _verify(cs, provider, plan, slot)
    return {"keyslot": slot, **_wrapped_details(wrapped)}


def plan_unlock(header: LuksHeader, device: str, name: str | None) -> Plan:
    """Unlock: unwrap the token's key (a key release) and open the device, or test it."""
    token = _the_token(header, device)
    what = f"open it as /dev/mapper/{name}" if name else "test it (open --test-passphrase)"
    return Plan(
        "crypt.unlock",
        device,
        header.uuid,
        (f"read dolmen token {token}", "unwrap its key with the provider (a key release)", what),
        changes_header=False,
        details={"token": token, "name": name},
    )


def run_unlock(plan: Plan, provider: KeyProvider, cs: Cryptsetup) -> dict[str, Any]:
    """Unwrap and open (``name``) or test the key (no name)."""
    slot, wrapped = read_token(cs, plan)
    key = provider.unwrap(wrapped, purpose=f"unlock {plan.target}")
    name = plan.details.get("name")
    if name:
        check(cs.open(plan.device, str(name), Secret(key), slot), "open")
    else:
        check(cs.test_key(plan.device, Secret(key), slot), "open --test-passphrase")
    return {"keyslot": slot, "opened": name or None, **_wrapped_details(wrapped)}


def plan_rotate(header: LuksHeader, device: str) -> Plan:
    """Rotate: rewrap the token's key to the provider's newest KEK; no data is re-encrypted."""
    token = _the_token(header, device)
    return Plan(
        "crypt.rotate",
        device,
        header.uuid,
        (
            f"back up the LUKS2 header of {device}",
            f"rewrap dolmen token {token}'s key to the provider's newest key version",
            "store the rewrapped token, verify it opens its keyslot, then remove the old one",
        ),
        details={"token": token},
    )


def run_rotate(plan: Plan, provider: KeyProvider, cs: Cryptsetup) -> dict[str, Any]:
    """The new token goes in and is verified before the old one goes: never none."""
    slot, old = read_token(cs, plan)
    new = provider.rewrap(old)
    check(cs.token_import(plan.device, make_token(new, slot), slot), "token import")
    _verify(cs, provider, plan, slot, new)
    check(cs.token_remove(plan.device, int(plan.details["token"])), "token remove")
    return {"keyslot": slot, "from_version": old.version, **_wrapped_details(new)}


def plan_recovery(header: LuksHeader, device: str, *, with_token: bool) -> Plan:
    """Recovery key: a printed 256-bit passphrase in a keyslot of its own."""
    slot = _free(header, device)
    how = "the dolmen token's key (a key release)" if with_token else "--key-file"
    if with_token:
        _the_token(header, device)
    return Plan(
        "crypt.recovery_key",
        device,
        header.uuid,
        (
            f"back up the LUKS2 header of {device}",
            f"make a recovery key (64 characters, 256 bits) and add it to keyslot {slot}, "
            f"unlocked with {how}",
            f"verify it opens keyslot {slot}; print it once (it is stored nowhere else)",
        ),
        details={"keyslot": slot, "via_token": with_token},
    )


def run_recovery(
    plan: Plan, cs: Cryptsetup, *, existing: bytes | None, provider: KeyProvider | None
) -> dict[str, Any]:
    """Add the recovery key; its text is returned under ``_recovery_key`` (never audited)."""
    slot = int(plan.details["keyslot"])
    if existing is None:
        if provider is None:
            raise UsageError("a recovery key needs --key-file or a provider for the token")
        _, wrapped = read_token(cs, plan, header_token=True)
        existing = provider.unwrap(wrapped, purpose=f"recovery-key {plan.target}")
    text = recovery_key()
    check(cs.add_key(plan.device, Secret(existing), Secret(text.encode()), slot), "luksAddKey")
    check(cs.test_key(plan.device, Secret(text.encode()), slot), "open --test-passphrase")
    return {"keyslot": slot, "_recovery_key": text}


def recovery_key() -> str:
    """64 modhex characters (256 bits) in 8 groups: ``cbdefghi-...``, typed at a console."""
    raw = secrets.token_bytes(32)
    chars = "".join(MODHEX[b >> 4] + MODHEX[b & 15] for b in raw)
    return "-".join(chars[i : i + 8] for i in range(0, 64, 8))


def read_token(cs: Cryptsetup, plan: Plan, *, header_token: bool = False) -> tuple[int, WrappedKey]:
    """The keyslot and wrapped key of the plan's dolmen token (``token export``)."""
    token = plan.details.get("token")
    if token is None or header_token:
        from dolmen.facts.crypt.luks2 import parse_dump_json

        dumped = parse_dump_json(check(cs.dump_json(plan.device), "luksDump").stdout)
        if dumped.header is None:
            raise InputError(f"unreadable LUKS2 metadata: {dumped.reason}", path=plan.device)
        token = _the_token(dumped.header, plan.device)
    out = check(cs.token_export(plan.device, int(token)), "token export")
    slot, wrapped = parse_token(out.stdout, device=plan.device)
    if wrapped.context != plan.uuid:  # a token copied from another device's header
        raise InputError(
            f"the dolmen token was wrapped for LUKS UUID {wrapped.context!r}, not this "
            f"device's {plan.uuid}",
            path=plan.device,
            hint="enrol this device itself: dolmen crypt enrol DEVICE",
        )
    return slot, wrapped


def load(host: Host, device: str) -> LuksHeader:
    """The device's LUKS2 header, or the refusal (device.read_luks2)."""
    return read_luks2(host, device)


def _verify(
    cs: Cryptsetup, provider: KeyProvider, plan: Plan, slot: int, wrapped: WrappedKey | None = None
) -> None:
    if wrapped is None:
        _, wrapped = read_token(cs, plan, header_token=True)
    key = provider.unwrap(wrapped, purpose=f"verify {plan.action} {plan.target}")
    check(cs.test_key(plan.device, Secret(key), slot), "verify: open --test-passphrase")


def _the_token(header: LuksHeader, device: str) -> int:
    tokens = dolmen_tokens(header)
    if not tokens:
        raise InputError(
            "no dolmen token on it",
            path=device,
            hint="enrol one first: dolmen crypt enrol DEVICE --provider vault|pkcs11|file",
        )
    return tokens[0].token


def _free(header: LuksHeader, device: str) -> int:
    slot = free_keyslot(header)
    if slot is None:
        raise InputError("all 32 keyslots are in use", path=device, hint="luksKillSlot one")
    return slot


def _wrapped_details(w: WrappedKey) -> Mapping[str, Any]:
    return {"provider": w.provider, "key_ref": w.key_ref, "kek_version": w.version}
