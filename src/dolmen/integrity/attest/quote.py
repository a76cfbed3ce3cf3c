"""A TPM quote: the signed TPMS_ATTEST, its signature, and the check of both.

``TPM2_Quote`` signs a TPMS_ATTEST (TPM 2.0 Part 2, 10.12.8) that holds the caller's
nonce (``extraData``), the PCR selection and one digest of the selected PCR values
(``pcrDigest``: the signing scheme's hash over the values concatenated, bank by bank in
selection order, PCRs ascending). Only that digest is signed: the PCR values that travel
with a quote are a claim the verifier checks against it. The signature (TPMT_SIGNATURE,
Part 2, 11.3.4) is ECDSA or RSASSA/RSAPSS by the attestation key (AK), checked here with
``cryptography``; tpm2_checkquote does the same and is the peer the tests and the bench
compare with. All structures are big-endian. Pure: bad bytes raise ``QuoteError``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from dolmen.frozen import frozen
from dolmen.integrity.attest import tcg

TPM_GENERATED = 0xFF544347
TPM_ST_ATTEST_QUOTE = 0x8018
_ECDSA, _RSASSA, _RSAPSS = 0x0018, 0x0014, 0x0016
_HASHES: dict[str, hashes.HashAlgorithm] = {
    "sha1": hashes.SHA1(),
    "sha256": hashes.SHA256(),
    "sha384": hashes.SHA384(),
    "sha512": hashes.SHA512(),
}


class QuoteError(ValueError):
    """The bytes are not a quote, or not a signature dolmen can check."""


@frozen
class Attest:
    """What a quote's TPMS_ATTEST says: the signer's qualified name, the nonce, the clock,
    the PCR selection (bank, PCRs) in order, and the digest of their values."""

    signer: bytes
    nonce: bytes
    clock: int
    reset_count: int
    restart_count: int
    selection: tuple[tuple[str, tuple[int, ...]], ...]
    pcr_digest: bytes


@frozen
class Signature:
    """A TPMT_SIGNATURE: the scheme (``ecdsa``, ``rsassa``, ``rsapss``), its hash, and
    the signature as ``cryptography`` takes it (DER for ECDSA)."""

    scheme: str
    hash_name: str
    value: bytes


class _Buf:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise QuoteError(f"{self.what} is cut off at byte {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def num(self, fmt: str) -> int:
        value: int = struct.unpack(">" + fmt, self.take(struct.calcsize(fmt)))[0]
        return value

    def sized(self) -> bytes:
        return self.take(self.num("H"))


def parse_attest(data: bytes) -> Attest:
    """A quote's TPMS_ATTEST (``tpm2_quote -m``)."""
    b = _Buf(data, "the TPMS_ATTEST")
    if b.num("I") != TPM_GENERATED:
        raise QuoteError("not made by a TPM (its magic is not TPM_GENERATED_VALUE)")
    if (kind := b.num("H")) != TPM_ST_ATTEST_QUOTE:
        raise QuoteError(f"an attestation of type {kind:#06x}, not a quote (0x8018)")
    signer, nonce = b.sized(), b.sized()
    clock, resets, restarts = b.num("Q"), b.num("I"), b.num("I")
    b.take(1 + 8)  # clockInfo.safe, firmwareVersion
    count = b.num("I")
    if count > 16:
        raise QuoteError(f"a PCR selection of {count} banks")
    selection: list[tuple[str, tuple[int, ...]]] = []
    for _ in range(count):
        alg, size = b.num("H"), b.num("B")
        bits = b.take(size)
        pcrs = tuple(i for i in range(8 * size) if bits[i // 8] >> (i % 8) & 1)
        selection.append((tcg.algorithm_name(alg), pcrs))
    digest = b.sized()
    return Attest(signer, nonce, clock, resets, restarts, tuple(selection), digest)


def parse_signature(data: bytes) -> Signature:
    """A TPMT_SIGNATURE (``tpm2_quote -s``, tpm2-tools' default ``tss`` format)."""
    b = _Buf(data, "the TPMT_SIGNATURE")
    scheme, hash_alg = b.num("H"), b.num("H")
    name = tcg.algorithm_name(hash_alg)
    if scheme == _ECDSA:
        r, s = b.sized(), b.sized()
        value = encode_dss_signature(int.from_bytes(r, "big"), int.from_bytes(s, "big"))
        return Signature("ecdsa", name, value)
    if scheme in (_RSASSA, _RSAPSS):
        return Signature("rsassa" if scheme == _RSASSA else "rsapss", name, b.sized())
    raise QuoteError(f"a signature scheme dolmen does not check ({scheme:#06x})")


def load_ak(ak_pem: bytes) -> ec.EllipticCurvePublicKey | rsa.RSAPublicKey:
    """The AK's public key from its PEM (``tpm2_createak -f pem``): EC or RSA."""
    try:
        key = serialization.load_pem_public_key(ak_pem)
    except (ValueError, TypeError) as e:
        raise QuoteError(f"not a PEM public key ({str(e).splitlines()[0][:120]})") from None
    if not isinstance(key, ec.EllipticCurvePublicKey | rsa.RSAPublicKey):
        raise QuoteError(f"a {type(key).__name__}, not an EC or RSA key a TPM signs with")
    return key


def verify_signature(ak_pem: bytes, attest: bytes, sig: Signature) -> bool:
    """Whether ``sig`` over ``attest`` was made by the AK whose public key is ``ak_pem``."""
    digest = _HASHES.get(sig.hash_name)
    if digest is None:
        raise QuoteError(f"a signature hashed with {sig.hash_name}, which dolmen does not check")
    key = load_ak(ak_pem)
    try:
        if isinstance(key, ec.EllipticCurvePublicKey) and sig.scheme == "ecdsa":
            key.verify(sig.value, attest, ec.ECDSA(digest))
        elif isinstance(key, rsa.RSAPublicKey) and sig.scheme == "rsassa":
            key.verify(sig.value, attest, padding.PKCS1v15(), digest)
        elif isinstance(key, rsa.RSAPublicKey) and sig.scheme == "rsapss":
            pss = padding.PSS(padding.MGF1(digest), padding.PSS.AUTO)
            key.verify(sig.value, attest, pss, digest)
        else:
            return False  # an ECDSA signature and an RSA key, or the reverse
    except InvalidSignature:
        return False
    return True


def pcr_digest(
    hash_name: str,
    selection: tuple[tuple[str, tuple[int, ...]], ...],
    values: Mapping[str, Mapping[int, bytes]],
) -> bytes | None:
    """The pcrDigest a TPM would sign for ``values``; None when one is missing."""
    joined = b""
    for bank, pcrs in selection:
        for pcr in pcrs:
            value = values.get(bank, {}).get(pcr)
            if value is None:
                return None
            joined += value
    return tcg.digest(hash_name, joined)
