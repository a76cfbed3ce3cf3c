"""The seal: what is refused (exit 1), what is not a manifest (exit 2), and the CLI's line."""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.errors import ExitCode, InputError
from dolmen.integrity import manifest as mf
from dolmen.integrity.verify import read_manifest
from dolmen.keys.file import FileKeyProvider
from dolmen.keys.trust import parse_trusted_keys, trust_line
from tests.integrity.roots import Site, make_site
from tests.report.contract import assert_valid


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Site, bytes]:
    site = make_site(tmp_path_factory.mktemp("sealed"))
    return site, site.seal()


def _seal_line(data: bytes) -> dict[str, object]:
    return dict(json.loads(data.split(b"\n", 1)[0]))


def _with_seal(data: bytes, **changes: object) -> bytes:
    seal = {**_seal_line(data), **changes}
    seal = {k: v for k, v in seal.items() if v is not None}
    return json.dumps(seal).encode() + b"\n" + data.split(b"\n", 1)[1]


def _flip_body(data: bytes) -> bytes:
    i = re.search(rb',"[0-9a-f]{64}",', data).start() + 4  # type: ignore[union-attr]
    return data[:i] + (b"0" if data[i : i + 1] != b"0" else b"1") + data[i + 1 :]


def _resign(data: bytes, body: bytes, signer: FileKeyProvider) -> bytes:
    kid, epoch = signer.public_key.key_id, signer.epoch
    sig = base64.b64encode(signer.sign(mf.message(kid, epoch, body))).decode()
    return (
        _with_seal(data, key_id=kid, epoch=epoch, signature=sig).split(b"\n", 1)[0] + b"\n" + body
    )


# name -> (edit of the sealed bytes, error class, words the one line holds)
REFUSED: dict[str, tuple[Callable[[bytes], bytes], type[Exception], str]] = {
    "content of an entry edited": (_flip_body, mf.ManifestRefused, "does not verify"),
    "entry removed": (
        lambda d: b"\n".join(d.split(b"\n")[:3] + d.split(b"\n")[4:]),
        mf.ManifestRefused,
        "does not verify",
    ),
    "truncated body": (lambda d: d[: len(d) * 2 // 3], mf.ManifestRefused, "cut short"),
    "truncated seal line": (lambda d: d[:40], InputError, "not a dolmen integrity manifest"),
    "empty": (lambda d: b"", InputError, "not a dolmen integrity manifest"),
    "unsigned": (lambda d: _with_seal(d, signature=None), mf.ManifestRefused, "not signed"),
    "empty signature": (lambda d: _with_seal(d, signature=""), mf.ManifestRefused, "not signed"),
    "signature not base64": (
        lambda d: _with_seal(d, signature="!!"),
        mf.ManifestRefused,
        "not base64",
    ),
    "signature of another manifest": (
        lambda d: _with_seal(d, signature=base64.b64encode(bytes(64)).decode()),
        mf.ManifestRefused,
        "does not verify",
    ),
    "epoch rewritten": (lambda d: _with_seal(d, epoch=2), mf.ManifestRefused, "does not verify"),
    "key id of an unknown key": (
        lambda d: _with_seal(d, key_id="ed25519:0000000000000000"),
        mf.ManifestRefused,
        "trust store does not hold",
    ),
    "epoch not a number": (lambda d: _with_seal(d, epoch="1"), mf.ManifestRefused, "malformed"),
    "another type": (
        lambda d: _with_seal(d, type="dolmen-integrity-manifest/9"),
        InputError,
        "not a dolmen integrity manifest",
    ),
    "a JSON file of something else": (
        lambda d: b'{"schema": "dolmen.verdict/1"}\n{}\n',
        InputError,
        "not a dolmen",
    ),
    "binary junk": (lambda d: os.urandom(512), InputError, "not a dolmen integrity manifest"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_broken_seal_is_refused(sealed: tuple[Site, bytes], case: str, tmp_path: Path) -> None:
    site, data = sealed
    edit, error, words = REFUSED[case]
    bad = tmp_path / "m"
    bad.write_bytes(edit(data))
    trust = parse_trusted_keys(site.trust.read_text())
    with pytest.raises(error) as info:
        read_manifest(bad, trust)
    assert words in str(info.value)


def test_a_key_trusted_for_another_epoch_is_refused(
    sealed: tuple[Site, bytes], tmp_path: Path
) -> None:
    site, data = sealed
    key = site.signer().public_key
    trust = parse_trusted_keys(trust_line(key, 2))
    (tmp_path / "m").write_bytes(data)
    with pytest.raises(mf.ManifestRefused, match="trusted for epoch 2 only"):
        read_manifest(tmp_path / "m", trust)


def test_another_site_key_is_not_trusted(sealed: tuple[Site, bytes], tmp_path: Path) -> None:
    site, data = sealed
    other = FileKeyProvider.generate(tmp_path / "other.key")
    forged = _resign(data, _flip_body(data).split(b"\n", 1)[1], other)
    (tmp_path / "m").write_bytes(forged)
    with pytest.raises(mf.ManifestRefused, match="trust store does not hold"):
        read_manifest(tmp_path / "m", parse_trusted_keys(site.trust.read_text()))


@pytest.mark.parametrize(
    ("body_edit", "words"),
    [
        (lambda b: b.replace(b'"entries":', b'"entries":1', 1), "counts"),
        (lambda b: b.replace(b',"file",', b',"door",', 1), "unknown types ['door']"),
        (lambda b: re.sub(rb',"file",(\d+),', rb',"file","644",', b, count=1), "integers"),
        (lambda b: b + b"{not json}\n", "malformed body"),
        (lambda b: b.replace(b'\n["/', b'\n["', 1), "every path is absolute"),
        (lambda b: b.replace(b'"sha256","target"', b'"sha256","target","x"', 1), "columns"),
        (lambda b: re.sub(rb',"([0-9a-f]{64})",', rb',"\1\1",', b, count=1), "64 hex"),
    ],
    ids=["count", "type", "mode", "junk line", "relative path", "columns", "digest"],
)
def test_a_validly_signed_malformed_body_is_input_error(
    sealed: tuple[Site, bytes], tmp_path: Path, body_edit: Callable[[bytes], bytes], words: str
) -> None:
    site, data = sealed
    body = body_edit(data.split(b"\n", 1)[1])
    (tmp_path / "m").write_bytes(_resign(data, body, site.signer()))
    with pytest.raises(InputError) as info:
        read_manifest(tmp_path / "m", parse_trusted_keys(site.trust.read_text()))
    assert words in str(info.value)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_refusals_are_one_line_and_a_documented_code(
    sealed: tuple[Site, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site, data = sealed
    trust = ["--trusted-keys", str(site.trust)]
    cases = {
        "tampered": (_flip_body(data), ExitCode.UNHEALTHY, "does not verify"),
        "unsigned": (_with_seal(data, signature=None), ExitCode.UNHEALTHY, "not signed"),
        "junk": (b"hello\n", ExitCode.UNDECIDED, "not a dolmen integrity manifest"),
    }
    for name, (payload, code, words) in cases.items():
        (tmp_path / name).write_bytes(payload)
        rc, out, err = _cli(capsys, "integrity", "verify", str(tmp_path / name), *trust, "--json")
        assert rc == code and out == "", name
        assert err.startswith("dolmen: error: ") and words in err.splitlines()[0], err
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rc, _, err = _cli(capsys, "integrity", "verify", str(fifo), *trust)
    assert rc == ExitCode.UNDECIDED and "not a regular file (FIFO), not a manifest" in err
    rc, _, err = _cli(capsys, "integrity", "verify", str(tmp_path), *trust)
    assert rc == ExitCode.UNDECIDED and "a folder, not a manifest" in err
    rc, _, err = _cli(capsys, "integrity", "verify", str(tmp_path / "none"), *trust)
    assert rc == ExitCode.UNDECIDED and "no such manifest" in err
    (tmp_path / "good").write_bytes(data)
    rc, _, err = _cli(
        capsys,
        "integrity",
        "verify",
        str(tmp_path / "good"),
        "--trusted-keys",
        str(tmp_path / "none"),
    )
    assert rc == ExitCode.UNDECIDED and "no trusted keys" in err


def test_cli_seal_then_verify_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = make_site(tmp_path)
    out_path = tmp_path / "m"
    rc, out, _ = _cli(
        capsys,
        "integrity",
        "seal",
        "-o",
        str(out_path),
        "--root",
        str(site.root),
        "--key",
        str(site.key),
    )
    assert rc == 0 and out.startswith("sealed ") and "(epoch 1)" in out
    rc, out, _ = _cli(
        capsys, "integrity", "verify", str(out_path), "--trusted-keys", str(site.trust), "--json"
    )
    doc = assert_valid(json.loads(out))
    assert rc == 0 and doc["intact"] and doc["mode"] == "incremental" and doc["hashed"] == 1
    os.chmod(site.root / "boot/grub/grub.cfg", 0o600)
    rc, out, _ = _cli(
        capsys,
        "integrity",
        "verify",
        str(out_path),
        "--trusted-keys",
        str(site.trust),
        "--json",
        "--full",
    )
    doc = assert_valid(json.loads(out))
    assert rc == 1 and doc["changes"] == [
        {"path": "/boot/grub/grub.cfg", "kind": "mode", "before": "0644", "after": "0600"}
    ]
    rc, out, _ = _cli(
        capsys, "integrity", "verify", str(out_path), "--trusted-keys", str(site.trust)
    )
    assert rc == 1 and out.splitlines()[0] == "mode      /boot/grub/grub.cfg: 0644 -> 0600"
    assert out.splitlines()[-1].startswith("CHANGED: 1 change(s)")


def test_cli_seal_refuses_a_fifo_or_missing_folder_before_hashing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = make_site(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    rc, _, err = _cli(
        capsys,
        "integrity",
        "seal",
        "-o",
        str(tmp_path / "fifo"),
        "--root",
        str(site.root),
        "--key",
        str(site.key),
    )
    assert rc == ExitCode.UNDECIDED and "is a FIFO, not a regular file" in err
    rc, _, err = _cli(
        capsys,
        "integrity",
        "seal",
        "-o",
        str(tmp_path / "no" / "m"),
        "--root",
        str(site.root),
        "--key",
        str(site.key),
    )
    assert rc == ExitCode.UNDECIDED and "does not exist" in err
    (site.root / "proc/sys/kernel/osrelease").unlink()
    rc, _, err = _cli(
        capsys,
        "integrity",
        "seal",
        "-o",
        str(tmp_path / "m"),
        "--root",
        str(site.root),
        "--key",
        str(site.key),
    )
    assert rc == ExitCode.UNDECIDED and "--kernel" in err and not (tmp_path / "m").exists()
