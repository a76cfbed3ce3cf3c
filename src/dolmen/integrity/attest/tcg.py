"""Names and numbers of the TCG specifications the event log and the quote are written in.

Event types: TCG PC Client Platform Firmware Profile (PFP) 1.05, section 10.4.1. Hash
algorithm identifiers: TCG Algorithm Registry (TPM_ALG_ID). Only the algorithms Python's
hashlib can compute are replayable; any other bank is named but unverifiable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial
from typing import Any

from dolmen.frozen import frozen

EV_NO_ACTION = 0x3
EV_SEPARATOR = 0x4
EV_ACTION = 0x5
EV_EFI_ACTION = 0x80000007

EVENT_TYPES: dict[int, str] = {
    0x0: "EV_PREBOOT_CERT",
    0x1: "EV_POST_CODE",
    0x2: "EV_UNUSED",
    0x3: "EV_NO_ACTION",
    0x4: "EV_SEPARATOR",
    0x5: "EV_ACTION",
    0x6: "EV_EVENT_TAG",
    0x7: "EV_S_CRTM_CONTENTS",
    0x8: "EV_S_CRTM_VERSION",
    0x9: "EV_CPU_MICROCODE",
    0xA: "EV_PLATFORM_CONFIG_FLAGS",
    0xB: "EV_TABLE_OF_DEVICES",
    0xC: "EV_COMPACT_HASH",
    0xD: "EV_IPL",
    0xE: "EV_IPL_PARTITION_DATA",
    0xF: "EV_NONHOST_CODE",
    0x10: "EV_NONHOST_CONFIG",
    0x11: "EV_NONHOST_INFO",
    0x12: "EV_OMIT_BOOT_DEVICE_EVENTS",
    0x13: "EV_POST_CODE2",
    0x80000000: "EV_EFI_EVENT_BASE",
    0x80000001: "EV_EFI_VARIABLE_DRIVER_CONFIG",
    0x80000002: "EV_EFI_VARIABLE_BOOT",
    0x80000003: "EV_EFI_BOOT_SERVICES_APPLICATION",
    0x80000004: "EV_EFI_BOOT_SERVICES_DRIVER",
    0x80000005: "EV_EFI_RUNTIME_SERVICES_DRIVER",
    0x80000006: "EV_EFI_GPT_EVENT",
    0x80000007: "EV_EFI_ACTION",
    0x80000008: "EV_EFI_PLATFORM_FIRMWARE_BLOB",
    0x80000009: "EV_EFI_HANDOFF_TABLES",
    0x8000000A: "EV_EFI_PLATFORM_FIRMWARE_BLOB2",
    0x8000000B: "EV_EFI_HANDOFF_TABLES2",
    0x8000000C: "EV_EFI_VARIABLE_BOOT2",
    0x8000000D: "EV_EFI_GPT_EVENT2",
    0x80000010: "EV_EFI_HCRTM_EVENT",
    0x800000E0: "EV_EFI_VARIABLE_AUTHORITY",
    0x800000E1: "EV_EFI_SPDM_FIRMWARE_BLOB",
    0x800000E2: "EV_EFI_SPDM_FIRMWARE_CONFIG",
}


def event_type_name(value: int) -> str:
    """The PFP name of an event type, or ``EV_UNKNOWN_0x...`` (a vendor's or a newer one)."""
    return EVENT_TYPES.get(value, f"EV_UNKNOWN_{value:#x}")


@frozen
class Algorithm:
    """A TPM hash algorithm: its registry id, tpm2-tools' name, digest size, hashlib name
    (None: Python cannot compute it, so a bank of it cannot be replayed)."""

    alg_id: int
    name: str
    size: int
    hashlib_name: str | None


def _hashlib(name: str) -> str | None:
    return name if name in hashlib.algorithms_available else None


ALGORITHMS: dict[int, Algorithm] = {
    a.alg_id: a
    for a in (
        Algorithm(0x0004, "sha1", 20, "sha1"),
        Algorithm(0x000B, "sha256", 32, "sha256"),
        Algorithm(0x000C, "sha384", 48, "sha384"),
        Algorithm(0x000D, "sha512", 64, "sha512"),
        # SM3 is in OpenSSL builds that enable it, rarely in Python's hashlib
        Algorithm(0x0012, "sm3_256", 32, _hashlib("sm3")),
        Algorithm(0x0027, "sha3_256", 32, "sha3_256"),
        Algorithm(0x0028, "sha3_384", 48, "sha3_384"),
        Algorithm(0x0029, "sha3_512", 64, "sha3_512"),
    )
}
BY_NAME: dict[str, Algorithm] = {a.name: a for a in ALGORITHMS.values()}
# hashlib's named constructors (hashlib.sha256) are several times faster than
# hashlib.new("sha256"): a replay of a long IMA list hashes tens of thousands of times.
_HASHERS: dict[str, Callable[[bytes], Any]] = {
    a.name: getattr(hashlib, a.hashlib_name, None) or partial(hashlib.new, a.hashlib_name)
    for a in ALGORITHMS.values()
    if a.hashlib_name is not None
}


def algorithm_name(alg_id: int) -> str:
    """tpm2-tools' name of an algorithm id, or ``alg_0x...`` for one not in the registry."""
    known = ALGORITHMS.get(alg_id)
    return known.name if known else f"alg_{alg_id:#06x}"


def digest(bank: str, data: bytes) -> bytes | None:
    """``data`` hashed with a bank's algorithm; None when Python cannot compute it."""
    hasher = _HASHERS.get(bank)
    if hasher is None:
        return None
    value: bytes = hasher(data).digest()
    return value
