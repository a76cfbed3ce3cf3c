"""The LUKS header parser on headers cryptsetup made, cross-checked with its own luksDump, and
on truncated, junk and hostile bytes."""

from __future__ import annotations

import functools
import hashlib
import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dolmen.facts.crypt.luks2 import (
    MAX_READ,
    NOT_LUKS,
    parse_dump_json,
    parse_header,
    parse_metadata,
)
from tests.crypt.images import FAST, cryptsetup, dump_json, make_image, needs_cryptsetup

pytestmark = needs_cryptsetup

# name -> luksFormat options; each image is made once per session.
KINDS = {
    "luks2-default": ("--type", "luks2", *FAST),
    "luks2-argon2id": (
        "--type",
        "luks2",
        "--pbkdf",
        "argon2id",
        "--pbkdf-memory",
        "8192",
        "--pbkdf-force-iterations",
        "4",
    ),
    "luks2-256bit-label": ("--type", "luks2", *FAST, "--key-size", "256", "--label", "scratch"),
    "luks2-64k-meta": ("--type", "luks2", *FAST, "--luks2-metadata-size", "64k"),
    "luks1": ("--type", "luks1", *FAST),
}
TPM2_TOKEN = {
    "type": "systemd-tpm2",
    "keyslots": ["0"],
    "tpm2-blob": "AAAA",
    "tpm2-pcrs": [7],
    "tpm2-pcr-bank": "sha256",
    "tpm2-primary-alg": "ecc",
    "tpm2-policy-hash": "00",
}


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("luks")
    out = {name: make_image(root / f"{name}.img", *args) for name, args in KINDS.items()}
    tokened = make_image(root / "tokens.img", "--type", "luks2", *FAST)
    cryptsetup("token", "import", str(tokened), stdin=json.dumps(TPM2_TOKEN).encode())
    clevis = {"type": "clevis", "keyslots": ["0"], "jwe": {"protected": "e30"}}
    cryptsetup("token", "import", str(tokened), stdin=json.dumps(clevis).encode())
    out["luks2-tokens"] = tokened
    return out


@functools.cache
def real_header() -> bytes:
    """A real LUKS2 header (both copies) made by cryptsetup, for the mutation test."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        image = make_image(Path(tmp) / "h.img", "--type", "luks2", *FAST, size_mb=18)
        with open(image, "rb") as f:
            return f.read(2 * 16384)


def head(path: Path, size: int = MAX_READ) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


@pytest.mark.parametrize("name", [*sorted(KINDS), "luks2-tokens"])
def test_real_headers_match_luksdump(images: dict[str, Path], name: str) -> None:
    got = parse_header(head(images[name]))
    assert got.header is not None, got.reason
    h = got.header
    dump = cryptsetup("luksDump", str(images[name])).stdout.decode()
    assert f"UUID:          \t{h.uuid}" in dump
    if h.version == 1:
        assert name == "luks1" and h.cipher == "aes-xts-plain64" and h.tokens == ()
        assert [s.slot for s in h.keyslots] == [0]
        return
    meta = json.loads(dump_json(images[name]))
    assert [s.slot for s in h.keyslots] == sorted(int(k) for k in meta["keyslots"])
    assert [t.type for t in h.tokens] == [meta["tokens"][k]["type"] for k in sorted(meta["tokens"])]
    assert h.cipher == meta["segments"]["0"]["encryption"]
    assert h.key_bits == meta["keyslots"]["0"]["key_size"] * 8
    assert h.keyslots[0].kdf == meta["keyslots"]["0"]["kdf"]["type"]
    # The recorded luksDump (trees, snapshots) gives the same facts, less the UUID.
    dumped = parse_dump_json(dump_json(images[name])).header
    assert dumped is not None and dumped.keyslots == h.keyslots and dumped.tokens == h.tokens


def test_what_the_table_shows(images: dict[str, Path]) -> None:
    small = parse_header(head(images["luks2-256bit-label"])).header
    assert small is not None and small.key_bits == 256 and small.label == "scratch"
    argon = parse_header(head(images["luks2-argon2id"])).header
    assert argon is not None and argon.keyslots[0].kdf == "argon2id"
    tok = parse_header(head(images["luks2-tokens"])).header
    assert tok is not None and tok.tpm2 and tok.clevis
    assert tok.token_types == ("clevis", "systemd-tpm2") and tok.tokens[0].keyslots == (0,)


def test_torn_primary_falls_back_to_the_secondary(images: dict[str, Path]) -> None:
    for name in ("luks2-default", "luks2-64k-meta"):
        data = bytearray(head(images[name]))
        data[4096 + 10] ^= 0xFF  # a byte of the primary's JSON: its checksum fails
        got = parse_header(bytes(data))
        assert got.header is not None and got.header.copy == "secondary", got.reason
        data[0:6] = b"LUKS\xba\xbe"
        size = struct.unpack(">Q", data[8:16])[0]
        data[size + 4096 + 10] ^= 0xFF  # both copies torn
        assert parse_header(bytes(data)).reason == "malformed: header checksum does not match"


def test_truncated(images: dict[str, Path]) -> None:
    data = head(images["luks2-default"])
    for n, word in (
        (0, "cut off: empty"),
        (3, "cut off"),
        (7, "cut off"),
        (100, "cut off"),
        (4096, "cut off"),
        (16000, "cut off"),
    ):
        assert parse_header(data[:n]).reason.startswith(word), n
    assert parse_header(data[:16384]).header is not None  # the primary alone suffices


def _forge(meta: object, *, size: int = 16384, version: int = 2, alg: bytes = b"sha256") -> bytes:
    """A header with a valid checksum over hostile content: the checksum is no defence."""
    raw = json.dumps(meta).encode() if not isinstance(meta, bytes) else meta
    area = bytearray(size)
    area[0:6] = b"LUKS\xba\xbe"
    area[6:8] = struct.pack(">H", version)
    area[8:16] = struct.pack(">Q", size)
    area[72 : 72 + len(alg)] = alg
    area[168:204] = b"6b1f63c2-5d0e-4a57-9e34-2f7c1a9d0b6e"
    area[4096 : 4096 + len(raw)] = raw[: size - 4096]
    area[448:480] = hashlib.sha256(bytes(area)).digest()
    return bytes(area)


HOSTILE = [
    (b"\0" * 8192, NOT_LUKS),
    (b"SKUL\xba\xbe" + b"\0" * 8192, NOT_LUKS),  # a secondary header where a primary is
    (b"hsqs" + b"\xff" * 100, NOT_LUKS),  # junk: a squashfs magic
    (_forge({}, version=3), "malformed: LUKS version 3"),
    (_forge({}, size=12345), "malformed: header size 12345"),
    (_forge({}, alg=b"md5"), "malformed: checksum algorithm 'md5'"),
    (_forge(b"\xff\xfe{"), "malformed: JSON area is not JSON"),
    (_forge(b"[1, 2]"), "malformed: metadata is not a JSON object"),
    (_forge({"keyslots": []}), "malformed: keyslots is not an object"),
    (_forge({"keyslots": {"-1": {}}}), "malformed: bad number '-1'"),
    (_forge({"keyslots": {"x": {}}}), "malformed: invalid literal"),
    (_forge({"keyslots": {"0": 5}}), "malformed: keyslot 0 is not an object"),
    (_forge({"tokens": {"0": {"type": "dolmen", "keyslots": "0"}}}), "malformed: token 0"),
    (_forge({"tokens": {"0": {"keyslots": ["99999"]}}}), "malformed: bad number"),
]


@pytest.mark.parametrize(("data", "reason"), HOSTILE)
def test_hostile(data: bytes, reason: str) -> None:
    got = parse_header(data)
    assert got.header is None and got.reason.startswith(reason), got.reason


def test_forged_but_sound_header_is_read_with_odd_values_as_none() -> None:
    meta = {
        "keyslots": {"0": {"type": "luks2", "key_size": True, "kdf": {"type": 7}}},
        "segments": {"0": {"encryption": ["x"], "sector_size": "4096"}},
    }
    h = parse_header(_forge(meta)).header
    assert h is not None and h.keyslots[0].key_size is None and h.keyslots[0].kdf is None
    assert h.cipher is None and h.sector_size is None and h.key_bits is None


def test_dump_json_junk() -> None:
    assert parse_dump_json("Device x is not a valid LUKS device.").reason.startswith("malformed")
    assert parse_metadata("text").reason == "malformed: metadata is not a JSON object"


def test_read_size(images: dict[str, Path]) -> None:
    from dolmen.facts.crypt.luks2 import read_size

    assert read_size(head(images["luks2-default"], 4096)) == 2 * 16384
    assert read_size(head(images["luks2-64k-meta"], 4096)) == 2 * 65536
    for junk in (b"", b"LUKS\xba\xbe\0\2", _forge({}, size=12345)[:4096], b"\0" * 4096):
        assert read_size(junk) == MAX_READ


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_real_headers_never_raise(data: st.DataObject) -> None:
    """Any byte of a real header flipped, any cut: a header or a reason, never an exception."""
    raw = bytearray(real_header())
    for _ in range(data.draw(st.integers(0, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    got = parse_header(bytes(raw[:cut]))
    assert (got.header is None) == bool(got.reason)
