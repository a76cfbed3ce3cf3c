"""A hostile user's inputs to the commands: FIFOs, devices, folders, junk bytes, unwritable
places. Each gets one line naming the problem and its documented exit code; nothing hangs,
nothing is half-written, no traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen.cli.main import main
from tests.conftest import fill_disk

pytestmark = pytest.mark.timeout(60)  # a FIFO read that blocks fails here, not at 600 s


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(args)
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    return rc, err


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", ["verify", "show", "tail"])
@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_an_audit_log_that_is_not_a_file_is_named(
    command: str,
    kind: str,
    fifo: Path,
    tmp_path: Path,
    dolmen_dirs: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = {"fifo": fifo, "device": Path("/dev/zero"), "folder": tmp_path}[kind]
    rc, err = _run(["audit", command, "--log", str(log)], capsys)
    assert rc == 2
    words = {"fifo": "a FIFO", "device": "a character device", "folder": "a folder"}[kind]
    assert f"{log}: {words}, not an audit log" in err


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("fifo", "not a regular file (FIFO)"),
        ("device", "not a regular file (character device)"),
        ("binary", "not UTF-8 text"),
        ("huge", "larger than 1 MiB"),
    ],
)
def test_trusted_keys_that_are_not_a_trust_file_are_named(
    kind: str,
    words: str,
    fifo: Path,
    tmp_path: Path,
    dolmen_dirs: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = {"fifo": fifo, "device": Path("/dev/zero")}.get(kind, tmp_path / kind)
    if kind == "binary":
        path.write_bytes(b"\xff\xfe\x00junk")
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(2 << 30)  # sparse: read whole, it would cost 2 GiB
    rc, err = _run(["audit", "verify", "--trusted-keys", str(path)], capsys)
    assert rc == 2
    assert f"{path}: cannot read the trusted keys: {words}" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_trusted_keys_are_the_environment_refusing(
    tmp_path: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trusted"
    path.write_text("")
    path.chmod(0)
    rc, err = _run(["audit", "verify", "--trusted-keys", str(path)], capsys)
    assert rc == 3 and "permission denied" in err


@pytest.mark.parametrize("as_tree", [False, True])
def test_a_snapshot_into_a_kernel_folder_is_refused_in_one_line(
    as_tree: bool, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """/proc passes the folder checks (it is there, root may write) and then refuses the
    private folder the bundle is built in: a write failure, not an internal error."""
    if os.geteuid() != 0:
        pytest.skip("as another user, /proc is refused earlier (permission denied)")
    out = "/proc/" if as_tree else "/proc/dolmen-test.tar.gz"
    rc, err = _run(["snapshot", "--only", "os", "-o", out], capsys)
    assert rc == 2 and "/proc cannot hold new files" in err


def test_a_demo_into_a_kernel_folder_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if os.geteuid() != 0:
        pytest.skip("as another user, /proc is refused earlier (permission denied)")
    rc, err = _run(["demo", "hgx-h100", "/proc/dolmen-demo"], capsys)
    assert rc == 2 and "/proc cannot hold new files" in err


def test_logs_scan_refuses_a_fifo_no_process_writes_to(
    fifo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("dolmen.cli.logs_input.FIFO_WAIT", 0.3)
    rc, err = _run(["logs", "scan", str(fifo)], capsys)
    assert rc == 2 and f"{fifo}: a FIFO no process writes to" in err and "hint:" in err


@pytest.mark.parametrize("late", [False, True])
def test_logs_scan_reads_a_fifo_whose_writer_comes(
    late: bool, fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process substitution (the writer is there first) and a named FIFO whose writer
    opens it a moment later are both read whole."""
    import threading
    import time

    line = b"[  12.5] NVRM: Xid (PCI:0000:86:00): 79, pid=0, GPU has fallen off the bus.\n"

    def write() -> None:
        with open(fifo, "wb") as f:
            if late:
                time.sleep(0.5)  # the writer holds it open before its first bytes
            f.write(line)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        rc, _ = _run(["logs", "scan", str(fifo)], capsys)
    finally:
        writer.join()
    assert rc == 1  # Xid 79 is critical


def test_logs_scan_reads_a_device_to_its_end(capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/kmsg has no end: it is read as dmesg reads it, to what the kernel holds now."""
    if not os.access("/dev/kmsg", os.R_OK):
        pytest.skip("/dev/kmsg is not readable here")
    try:
        os.close(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
    except OSError as e:
        pytest.skip(f"/dev/kmsg: {e.strerror}")
    rc, _ = _run(["logs", "scan", "/dev/kmsg"], capsys)
    assert rc in (0, 1)


@pytest.mark.parametrize("url", ["tcp://[::1", "tls://127.0.0.1:99999"])
def test_audit_export_to_a_broken_url_is_a_usage_error(
    url: str, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, err = _run(["audit", "export", "--format", "json", "--to", url], capsys)
    assert rc == 2 and f"--to {url!r}" in err and "hint: use tcp://HOST:PORT" in err


def test_fleet_collect_names_a_broken_url_as_a_failed_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["fleet", "collect", "http://[::1", "-o", str(tmp_path)])
    out = capsys.readouterr()
    assert rc == 2 and "http://[::1: not a URL" in out.out + out.err
    assert "internal error" not in out.err


def test_audit_tail_refuses_a_negative_count_and_names_a_missing_log(
    tmp_path: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both printed nothing and exited 0: an operator read "no events"."""
    assert main(["audit", "tail", "-n", "-5"]) == 2
    assert "-5 is not in the range" in capsys.readouterr().err
    rc, err = _run(["audit", "tail", "--log", str(tmp_path / "absent.log")], capsys)
    assert rc == 2 and "absent.log: no audit log yet" in err


@pytest.mark.parametrize("link", ["nowhere", "loop"])
def test_fleet_collect_into_a_broken_link_is_named(
    link: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said 'cannot write ...: File exists' and 'free space or fix the permissions'."""
    store = tmp_path / "store"
    store.symlink_to(tmp_path / "nowhere" if link == "nowhere" else store)
    verdict = tmp_path / "junk.json"
    verdict.write_bytes(b"\xff junk")
    rc, err = _run(["fleet", "collect", str(verdict), "-o", str(store)], capsys)
    assert rc == 2 and f"{store} is a symbolic link to nothing (or a link loop)" in err


@pytest.mark.parametrize("existing", [False, True], ids=["new-store", "store"])
def test_fleet_collect_on_a_full_disk_leaves_no_empty_folder(
    existing: bool, small_tmpfs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It left an empty rejected/ (and the store's own folder) behind: a failed write takes
    back the folders it made, and says the disk is full, exit 3."""
    store = small_tmpfs / "store"
    if existing:
        store.mkdir()
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"<html>gateway timeout</html>" * 200)  # kept under rejected/
    fill_disk(small_tmpfs / "filler")
    rc, err = _run(["fleet", "collect", str(junk), "-o", str(store)], capsys)
    assert rc == 3 and "could not write (the disk is full)" in err, err
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler", "store"][: 1 + existing]
    assert not existing or list(store.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "what", "hint"),
    [
        (["validate", "--config"], "the configuration file", "save the configuration file as"),
        (["net", "plan", "--policy"], "the network policy", "save the network policy as"),
        (["jobs", "submit", "--file"], "the job file", "save the job file as UTF-8"),
        (["stack", "diff"], "the stack lock", "write it again: dolmen stack lock"),
    ],
)
def test_a_file_that_is_not_utf8_says_so_in_words_with_a_hint(
    argv: list[str],
    what: str,
    hint: str,
    tmp_path: Path,
    dolmen_dirs: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Python's codec text ("'utf-8' codec can't decode byte 0xff in position 5: invalid
    start byte") leaked into the line, and the config reader gave no hint."""
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'x = "\xff"\n')
    rc, err = _run([*argv, str(bad)], capsys)
    first, second = err.splitlines()[:2]
    assert rc == 2 and first == f"dolmen: error: {bad}: cannot read {what}: not UTF-8 text (byte 5)"
    assert second.startswith(f"hint: {hint}") and "codec" not in err


def test_a_missing_config_file_has_a_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, err = _run(["validate", "--config", str(tmp_path / "nope.toml")], capsys)
    assert rc == 2 and "no such configuration file" in err
    assert "hint: check the path of the configuration file" in err


def test_a_fifo_given_as_a_file_or_folder_is_named_not_missing(
    fifo: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO, a device or a folder where a file was asked for said "no such file"."""
    rc, err = _run(["tune", "show", str(fifo)], capsys)
    assert rc == 2 and f"{fifo}: a FIFO, not a profile file" in err
    rc, err = _run(["tune", "show", "/dev/zero"], capsys)
    assert rc == 2 and "/dev/zero: a character device, not a profile file" in err
    rc, err = _run(["jobs", "list", "--backend", "kubernetes", "--kubeconfig", str(fifo)], capsys)
    assert rc == 2 and f"{fifo}: a FIFO, not a kubeconfig" in err
    rc, err = _run(["jobs", "submit", "--workdir", str(fifo), "--", "true"], capsys)
    assert rc == 2 and f"working directory {fifo} is not a folder" in err


def test_a_host_tree_root_that_is_no_folder_says_what_it_is(
    fifo: Path, tmp_path: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """integrity's --root said 'no such directory' of a FIFO or a file."""
    rc, err = _run(["integrity", "seal", "-o", str(tmp_path / "m"), "--root", str(fifo)], capsys)
    assert rc == 2 and "not a host tree (a FIFO, not a folder)" in err
    rc, err = _run(
        ["integrity", "seal", "-o", str(tmp_path / "m"), "--root", "/nonexistent"], capsys
    )
    assert rc == 2 and "not a host tree (no such folder)" in err
