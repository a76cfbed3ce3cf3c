"""enrol, unlock, rotate, recovery-key end to end on LUKS2 images, with the file provider:
real cryptsetup, real tokens, real audit events; dm-crypt cannot activate here, so unlock is
proven with ``open --test-passphrase`` (and ``--name`` is shown to fail cleanly)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dolmen.audit.reader import read_entries
from dolmen.cli.main import main
from dolmen.facts.crypt.luks2 import MAX_READ, LuksHeader, parse_header
from tests.crypt.images import cryptsetup, make_image, needs_cryptsetup
from tests.report.contract import assert_valid

pytestmark = needs_cryptsetup


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["crypt", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def header(path: Path) -> LuksHeader:
    with open(path, "rb") as f:
        h = parse_header(f.read(MAX_READ)).header
    assert h is not None
    return h


def events(state: Path) -> list[tuple[str, str, dict]]:
    out = []
    for e in read_entries(state / "audit" / "audit.log"):
        assert e.event is not None
        out.append((e.event.action, e.event.outcome, dict(e.event.details)))
    return out


def enrol(capsys: pytest.CaptureFixture[str], image: Path, *more: str) -> tuple[int, str, str]:
    key = str(image.with_suffix(".key"))
    return run(capsys, "enrol", str(image), "--provider", "file", "--key-file", key, *more)


def test_dry_run_changes_nothing(
    image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = image.read_bytes()
    rc, out, _ = enrol(capsys, image)
    assert rc == 0 and "dry run: nothing changed" in out and "keyslot 1" in out
    rc, out, _ = enrol(capsys, image, "--json")
    plan = assert_valid(json.loads(out))
    assert plan["details"] == {"provider": "file", "keyslot": 1}
    assert image.read_bytes() == before and not (dolmen_dirs / "audit").exists()


def test_enrol_unlock_rotate_recovery(
    image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = enrol(capsys, image, "--yes", "--json")
    assert rc == 0, err
    done = assert_valid(json.loads(out))["result"]
    h = header(image)
    assert [t.type for t in h.tokens] == ["dolmen"] and h.tokens[0].keyslots == (1,)
    assert Path(done["backup"]).stat().st_size > 0 and done["kek_version"] == 1
    token = json.loads(cryptsetup("token", "export", "--token-id", "0", str(image)).stdout)
    assert token["dolmen_wrapped"]["context"] == h.uuid  # bound to this device
    fields = {"type", "provider", "key_ref", "version", "context", "blob"}
    assert set(token["dolmen_wrapped"]) == fields  # the wrapped key only, never the key

    rc, out, err = run(capsys, "unlock", str(image), "--yes")
    assert rc == 0 and "crypt.unlock: done" in out, err
    rc, _, err = run(capsys, "unlock", str(image), "--yes", "--name", "dolmen-test")
    assert rc == 3 and "device-mapper" in err  # dm-crypt cannot activate here

    from dolmen.config import Config
    from dolmen.crypt.keys import provider_for

    assert provider_for(Config(), "file").rotate() == 2
    rc, out, err = run(capsys, "rotate", str(image), "--yes", "--json")
    assert rc == 0, err
    result = assert_valid(json.loads(out))["result"]
    assert (result["from_version"], result["kek_version"]) == (1, 2)
    h2 = header(image)
    assert [t.type for t in h2.tokens] == ["dolmen"] and h2.keyslots == h.keyslots
    assert run(capsys, "unlock", str(image), "--yes")[0] == 0

    rc, out, err = run(capsys, "recovery-key", str(image), "--yes", "--json")
    assert rc == 0, err
    doc = assert_valid(json.loads(out))
    recovery = image.with_suffix(".recovery")
    recovery.write_text(doc["recovery_key"])
    cryptsetup(
        "open", "--test-passphrase", "--key-slot", "2", "--key-file", str(recovery), str(image)
    )
    seen = [(a, o) for a, o, _ in events(dolmen_dirs)]
    assert seen[:3] == [
        ("crypt.enrol", "unknown"),
        ("keys.release", "success"),
        ("crypt.enrol", "success"),
    ]
    assert ("crypt.unlock", "failure") in seen and ("crypt.rotate", "success") in seen
    assert all(doc["recovery_key"] not in json.dumps(d) for _, _, d in events(dolmen_dirs))


def test_a_failure_after_the_new_keyslot_restores_the_header(
    image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 32 tokens of another kind: cryptsetup refuses the dolmen token after luksAddKey ran.
    for _ in range(32):
        cryptsetup("token", "import", str(image), stdin=b'{"type":"other","keyslots":[]}')
    before = header(image)
    rc, _, err = enrol(capsys, image, "--yes")
    assert rc == 3 and "token import" in err and "header was restored" in err
    after = header(image)
    assert after.keyslots == before.keyslots and after.tokens == before.tokens
    last = events(dolmen_dirs)[-1]
    assert last[:2] == ("crypt.enrol", "failure") and last[2]["rolled_back"] is True


def test_wrong_key_file_changes_nothing(
    image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    wrong = tmp_path / "wrong.key"
    wrong.write_bytes(b"not the passphrase")
    before = header(image)
    rc, _, err = run(
        capsys, "enrol", str(image), "--provider", "file", "--key-file", str(wrong), "--yes"
    )
    assert rc == 3 and "luksAddKey" in err and "wrong key" in err.lower()
    assert header(image) == before


def test_refusals(
    image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    key = str(image.with_suffix(".key"))
    plain = tmp_path / "plain.img"
    plain.write_bytes(b"\0" * 65536)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    luks1 = make_image(
        tmp_path / "old.img", "--type", "luks1", "--pbkdf-force-iterations", "1000", size_mb=4
    )
    cases = [
        ((str(plain),), "not a LUKS device"),
        ((str(fifo),), "a FIFO, not a block device"),
        ((str(tmp_path / "nope"),), "no such device"),
        ((str(tmp_path),), "a folder, not a block device"),
        ((str(luks1),), "LUKS1, which has no tokens"),
    ]
    for args, words in cases:
        rc, _out, err = run(capsys, "enrol", *args, "--provider", "file", "--key-file", key)
        assert rc == 2 and words in err and len(err.strip().splitlines()) <= 2, (args, err)
    rc, _, err = run(capsys, "enrol", str(image), "--provider", "file", "--key-file", str(fifo))
    assert rc == 2 and "key file" in err
    rc, _, err = run(capsys, "unlock", str(image))
    assert rc == 2 and "no dolmen token" in err
    assert enrol(capsys, image, "--yes")[0] == 0
    rc, _, err = enrol(capsys, image, "--yes")
    assert rc == 2 and "a dolmen token is already there" in err


def test_a_token_copied_to_another_device_does_not_unlock_it(
    image: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert enrol(capsys, image, "--yes")[0] == 0
    other = make_image(
        tmp_path / "other.img",
        "--type",
        "luks2",
        "--pbkdf",
        "pbkdf2",
        "--pbkdf-force-iterations",
        "1000",
        size_mb=20,
    )
    token = cryptsetup("token", "export", "--token-id", "0", str(image)).stdout
    cryptsetup("token", "import", str(other), stdin=token.replace(b'["1"]', b'["0"]'))
    rc, _, err = run(capsys, "unlock", str(other), "--yes")
    assert rc == 2 and "wrapped for LUKS UUID" in err


def test_a_plain_user_is_told_to_run_as_root(image: Path, tmp_path: Path) -> None:
    """As nobody: a device that may be read but not written, and one behind a folder that may
    not be searched, each refused in one line with exit 3 (the environment refused)."""
    import subprocess
    import sys

    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*nobody, sys.executable, "-c", "pass"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"{sys.executable} does not run unprivileged")
    shared = Path(f"/tmp/dolmen-crypt-nobody-{os.getpid()}")
    shared.mkdir(mode=0o755)
    try:
        readable = shared / "disk.img"
        readable.write_bytes(image.read_bytes()[: 1 << 20])
        readable.chmod(0o644)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
            "DOLMEN_STATE_DIR": str(shared / "state"),
            "DOLMEN_CONFIG_DIR": str(shared / "config"),
        }
        cmd = [*nobody, sys.executable, "-m", "dolmen.cli.main", "crypt", "unlock"]
        for device, words in ((readable, "may not write it"), (image, "may not reach it")):
            out = subprocess.run([*cmd, str(device)], env=env, capture_output=True, text=True)
            assert out.returncode == 3 and words in out.stderr, out.stderr
            assert len(out.stderr.strip().splitlines()) <= 2
    finally:
        import shutil

        shutil.rmtree(shared)
