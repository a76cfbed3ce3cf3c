"""The TPM, through tpm2-tools run by the host: quote, read and extend PCRs, make an AK.

The TCTI (how tpm2-tools reach a TPM) is ``--tcti`` when given (``device:/dev/tpmrm0``,
``swtpm:host=127.0.0.1,port=2321``), else the host's TPM2TOOLS_TCTI, else tpm2-tools'
default device. Without a resource manager (swtpm, /dev/tpm0) transient objects stay
loaded until flushed and the TPM runs out of slots (0x902): every operation is followed
by ``tpm2_flushcontext -t``. A missing TPM, a TCTI that does not answer and a missing
tpm2-tools are ``EnvironmentProblem`` naming which (exit code 3).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from dolmen.errors import EnvironmentProblem
from dolmen.host import CommandResult, Host, RunStatus
from dolmen.integrity.attest import tcg
from dolmen.integrity.attest.bundle import QuoteBundle

TIMEOUT = 30.0
_EXTENDS_PER_CALL = 64  # argv stays far below ARG_MAX (a sha512+sha256 spec is ~200 bytes)
_BANK = re.compile(r"^\s*(\w+):\s*$")
_VALUE = re.compile(r"^\s*(\d+)\s*:\s*0x([0-9A-Fa-f]+)\s*$")


def tcti_of(host: Host, tcti: str | None) -> str | None:
    """The TCTI the tools will use, as configured (None: tpm2-tools' default device)."""
    return tcti or host.environ().get("TPM2TOOLS_TCTI") or None


def require_tpm(host: Host, tcti: str | None) -> None:
    """Refuse early, naming what is missing, when there is no TPM to talk to."""
    if tcti_of(host, tcti) is None and not (host.exists("dev/tpmrm0") or host.exists("dev/tpm0")):
        raise EnvironmentProblem(
            "no TPM: /dev/tpmrm0 and /dev/tpm0 are absent and no TCTI is set",
            hint="enable the TPM in the firmware setup, or name one with --tcti "
            "(e.g. swtpm:host=127.0.0.1,port=2321) or TPM2TOOLS_TCTI",
        )


def run_tool(host: Host, argv: Sequence[str], tcti: str | None) -> CommandResult:
    """One tpm2-tools command (with ``-T`` when a TCTI is given); raises when it fails."""
    full = [argv[0], *(["-T", tcti] if tcti else []), *argv[1:]]
    result = host.run(full, timeout=TIMEOUT)
    if result.status is RunStatus.MISSING:
        raise EnvironmentProblem(
            f"{argv[0]} not found: install tpm2-tools", hint="apt-get install tpm2-tools"
        )
    if not result.ok:
        where = tcti_of(host, tcti) or "the default device (/dev/tpmrm0)"
        text = (result.stderr or result.stdout).strip().splitlines()
        why = next((line for line in text if "ERROR" in line), text[0] if text else "")
        raise EnvironmentProblem(
            f"{argv[0]} failed on the TPM at {where}: {why or result.describe()}",
            hint="check the TPM answers (tpm2_getcap properties-fixed) and the AK context",
        )
    return result


def flush(host: Host, tcti: str | None) -> None:
    """Flush transient objects (see the module docstring); a failure here is harmless."""
    full = ["tpm2_flushcontext", *(["-T", tcti] if tcti else []), "-t"]
    host.run(full, timeout=TIMEOUT)


def selection_text(selection: tuple[tuple[str, tuple[int, ...]], ...]) -> str:
    """``sha256:0,1,7+sha1:10``: tpm2-tools' PCR selection syntax."""
    return "+".join(f"{bank}:{','.join(map(str, pcrs))}" for bank, pcrs in selection)


def quote(
    host: Host,
    ak_context: Path,
    selection: tuple[tuple[str, tuple[int, ...]], ...],
    nonce: bytes,
    tcti: str | None = None,
) -> QuoteBundle:
    """A fresh quote over ``selection`` answering ``nonce``, signed by the AK."""
    require_tpm(host, tcti)
    with tempfile.TemporaryDirectory(prefix="dolmen-quote-") as tmp:
        # -o: tpm2_quote prints the PCR values it read with the quote only when asked to
        # write them (their file is tpm2-tools' own format; the printed listing is read).
        msg, sig, pcrs = Path(tmp) / "attest", Path(tmp) / "sig", Path(tmp) / "pcrs"
        try:
            result = run_tool(
                host,
                ["tpm2_quote", "-c", str(ak_context), "-l", selection_text(selection),
                 "-q", nonce.hex(), "-m", str(msg), "-s", str(sig), "-o", str(pcrs),
                 "-g", "sha256"],
                tcti,
            )  # fmt: skip
        finally:
            flush(host, tcti)
        bundle = QuoteBundle(
            nonce, msg.read_bytes(), sig.read_bytes(), parse_pcr_listing(result.stdout), tcti
        )
    return bundle


def read_pcrs(
    host: Host, selection: tuple[tuple[str, tuple[int, ...]], ...], tcti: str | None = None
) -> dict[str, dict[int, bytes]]:
    """The TPM's current values of ``selection`` (``tpm2_pcrread``)."""
    require_tpm(host, tcti)
    return parse_pcr_listing(
        run_tool(host, ["tpm2_pcrread", selection_text(selection)], tcti).stdout
    )


def extend(
    host: Host, measurements: Sequence[tuple[int, dict[str, bytes]]], tcti: str | None = None
) -> None:
    """Extend PCRs, in order, each in the banks given (what firmware does per measured
    event); tpm2_pcrextend takes many in one call, applied left to right."""
    specs = [
        f"{pcr}:" + ",".join(f"{bank}={value.hex()}" for bank, value in digests.items())
        for pcr, digests in measurements
    ]
    for start in range(0, len(specs), _EXTENDS_PER_CALL):
        run_tool(host, ["tpm2_pcrextend", *specs[start : start + _EXTENDS_PER_CALL]], tcti)


def create_ak(host: Host, folder: Path, tcti: str | None = None) -> tuple[Path, Path]:
    """An ECC P-256 AK under a fresh EK in ``folder``: its context and its PEM public key.
    (In production the AK is enrolled once, its public key bound to the EK certificate by
    credential activation; this makes one for tests, benchmarks and a first trial.)"""
    require_tpm(host, tcti)
    ek, ctx, pem = folder / "ek.ctx", folder / "ak.ctx", folder / "ak.pem"
    try:
        run_tool(host, ["tpm2_createek", "-c", str(ek), "-G", "ecc"], tcti)
        flush(host, tcti)
        run_tool(
            host,
            ["tpm2_createak", "-C", str(ek), "-c", str(ctx), "-G", "ecc", "-g", "sha256",
             "-s", "ecdsa", "-u", str(pem), "-f", "pem"],
            tcti,
        )  # fmt: skip
    finally:
        flush(host, tcti)
    return ctx, pem


def parse_pcr_listing(text: str) -> dict[str, dict[int, bytes]]:
    """The ``pcrs:`` listing tpm2_quote and tpm2_pcrread print (``  sha256:`` then
    ``    0 : 0x...``); values whose size is wrong for their bank are left out."""
    banks: dict[str, dict[int, bytes]] = {}
    bank: str | None = None
    for line in text.splitlines():
        if m := _BANK.match(line):
            name = m.group(1)
            bank = name if name in tcg.BY_NAME else None
        elif (m := _VALUE.match(line)) and bank is not None:
            value = bytes.fromhex(m.group(2)) if len(m.group(2)) % 2 == 0 else b""
            if len(value) == tcg.BY_NAME[bank].size and int(m.group(1)) <= 23:
                banks.setdefault(bank, {})[int(m.group(1))] = value
    return banks
