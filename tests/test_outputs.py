"""Output paths are someone's files (STYLE.md rule 21, issue 9 case 1): dolmen writes only
regular files, never replaces a device, FIFO, socket or folder, never creates folders.

Every user-named output (validate --junit/--prometheus, baseline capture -o, snapshot -o,
audit export --to file:) is refused before any work, with one line and exit 2, and the
thing at that path is left exactly as it was.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.demo import build_sample
from dolmen.errors import UsageError
from dolmen.fsutil import atomic_write, output_target, write_failure, write_output
from tests.conftest import make_tree


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _folder(p: Path) -> None:
    p.mkdir()


def _socket(p: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()


def _chardev(p: Path) -> None:
    try:  # the same device numbers as /dev/null, in the test's own folder
        os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD)")


def _link_to_folder(p: Path) -> None:
    (p.parent / "real-folder").mkdir()
    p.symlink_to(p.parent / "real-folder")


def _dangling(p: Path) -> None:
    p.symlink_to(p.parent / "nothing-here")


KINDS: dict[str, Callable[[Path], None]] = {
    "fifo": _fifo,
    "folder": _folder,
    "socket": _socket,
    "char device": _chardev,
    "link to a folder": _link_to_folder,
    "dangling link": _dangling,
}


def fingerprint(p: Path) -> tuple[int, int, str | None]:
    st = os.lstat(p)
    return st.st_mode, st.st_rdev, os.readlink(p) if p.is_symlink() else None


@pytest.fixture(params=sorted(KINDS))
def special(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    p = tmp_path / "target"
    KINDS[request.param](p)
    before = fingerprint(p)
    yield p
    assert fingerprint(p) == before, "the thing at the output path was changed"


def test_output_target_refuses_anything_but_a_regular_file(special: Path) -> None:
    with pytest.raises(UsageError) as e:
        output_target(special)
    assert str(special) in str(e.value) and "\n" not in str(e.value)


def test_write_output_refuses_and_leaves_it_as_it_was(special: Path) -> None:
    with pytest.raises(UsageError):
        write_output(special, b"x")


def test_atomic_write_never_renames_over_a_special_file(tmp_path: Path) -> None:
    for name, make in (("fifo", _fifo), ("folder", _folder), ("socket", _socket)):
        p = tmp_path / name
        make(p)
        before = fingerprint(p)
        with pytest.raises(OSError):
            atomic_write(p, b"x")
        assert fingerprint(p) == before
    assert sorted(os.listdir(tmp_path)) == ["fifo", "folder", "socket"]  # no temporaries left


def test_a_missing_folder_is_an_error_not_created(tmp_path: Path) -> None:
    target = tmp_path / "nonexistent" / "dir" / "x.prom"
    with pytest.raises(UsageError, match="does not exist"):
        write_output(target, b"x")
    assert not (tmp_path / "nonexistent").exists()


def test_a_kernel_folder_is_named_as_such_not_a_full_disk(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """/proc is there but holds no new file (ENOENT): not "free space or fix the permissions"."""
    with pytest.raises(UsageError) as got:
        write_output(Path("/proc/dolmen-test.svg"), b"<svg/>", what="picture")
    assert got.value.message == (
        "picture /proc/dolmen-test.svg: could not write: /proc cannot hold new files "
        "(No such file or directory)"
    )
    assert got.value.hint is not None and "free space" not in got.value.hint
    build_sample("hgx-h100", tmp_path / "t")
    rc, err = _cli(
        capsys, ["topo", "--from", str(tmp_path / "t"), "--svg", "/proc/dolmen-test.svg"]
    )
    assert rc == 2 and "/proc cannot hold new files" in err and "free space" not in err


@pytest.mark.parametrize(
    ("code", "words", "exit_code"),
    [
        (errno.ENOSPC, " (the disk is full)", 3),
        (errno.EDQUOT, " (over the disk quota)", 3),
        (errno.EROFS, " (the file system is read-only)", 3),
        (errno.ENOTDIR, ": /x cannot hold new files", 2),
        (errno.EIO, " (Input/output error)", 3),
    ],
)
def test_write_failure_names_the_cause(code: int, words: str, exit_code: int) -> None:
    err = write_failure("out /x/y", OSError(code, os.strerror(code)), Path("/x"), "kept")
    assert err.message.startswith(f"out /x/y: could not write{words}")
    assert int(err.exit_code) == exit_code and (err.hint or "").endswith("; kept")


def test_a_link_to_a_regular_file_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.prom"
    real.write_bytes(b"old")
    link = tmp_path / "link.prom"
    link.symlink_to(real)
    write_output(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_a_regular_file_keeps_its_mode(tmp_path: Path) -> None:
    p = tmp_path / "out.xml"
    p.write_bytes(b"old")
    p.chmod(0o640)
    write_output(p, b"new")
    assert p.read_bytes() == b"new" and stat.S_IMODE(p.stat().st_mode) == 0o640


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "tree", files={"proc/version": "Linux version 6.1.0\n"})


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    rc = main(argv)
    _, err = capsys.readouterr()
    return rc, err


@pytest.mark.parametrize("flag", ["--junit", "--prometheus"])
@pytest.mark.parametrize("lean", [True, False], ids=["lean", "click"])
def test_validate_refuses_a_special_output_before_running(
    capsys: pytest.CaptureFixture[str], tree: Path, special: Path, flag: str, lean: bool
) -> None:
    argv = ["validate", "--level", "quick", "--from", str(tree), "--npd", flag, str(special)]
    rc = main(argv, lean=lean)
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""  # refused before the checks ran: no verdict line
    assert err.startswith(f"dolmen: error: {flag} {special}") and "hint:" in err


def test_validate_refuses_a_missing_folder(capsys: pytest.CaptureFixture[str], tree: Path) -> None:
    prom = tree.parent / "nonexistent" / "dir" / "x.prom"
    rc, err = _cli(capsys, ["validate", "--from", str(tree), "--npd", "--prometheus", str(prom)])
    assert rc == 2 and "does not exist" in err
    assert not (tree.parent / "nonexistent").exists()


def test_baseline_capture_refuses_a_folder(
    capsys: pytest.CaptureFixture[str], tree: Path, tmp_path: Path
) -> None:
    out = tmp_path / "here"
    out.mkdir()
    rc, err = _cli(capsys, ["baseline", "capture", "--from", str(tree), "-o", str(out)])
    assert rc == 2 and "is a folder" in err and out.is_dir()


def test_snapshot_refuses_a_fifo_and_a_missing_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fifo = tmp_path / "bundle.tar.gz"
    os.mkfifo(fifo)
    rc, err = _cli(capsys, ["snapshot", "-o", str(fifo)])
    assert rc == 2 and "is a FIFO" in err and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    rc, err = _cli(capsys, ["snapshot", "-o", f"{tmp_path / 'nope'}/"])
    assert rc == 2 and "does not exist" in err and not (tmp_path / "nope").exists()
    rc, err = _cli(capsys, ["snapshot", "-o", str(tmp_path / "nope" / "b.tar.gz")])
    assert rc == 2 and "does not exist" in err and not (tmp_path / "nope").exists()
