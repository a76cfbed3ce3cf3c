"""Snapshot archives: opened safely, hostile members refused, nothing written outside."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from dolmen.errors import InputError
from dolmen.host import open_host
from dolmen.host.archive import ArchiveHost
from tests.conftest import make_tree


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def test_round_trip_of_a_tree(tmp_path: Path) -> None:
    tree = make_tree(
        tmp_path / "gpu01",
        files={"dolmen-snapshot.json": '{"hostname": "gpu01"}', "proc/loadavg": "0.1 0.2 0.3"},
        commands={"ibstat": "CA 'mlx5_0'\n"},
    )
    archive = tmp_path / "snap.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="gpu01")
    host = open_host(archive)
    assert isinstance(host, ArchiveHost)
    extracted = host.root
    assert host.hostname == "gpu01"
    assert host.run(["ibstat"]).stdout.startswith("CA")
    host.close()
    assert not extracted.exists()


def test_dotdot_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "bad.tar.gz", [_file("../escape.txt", b"x")])
    with pytest.raises(InputError, match="unsafe member"):
        open_host(archive)
    assert not (tmp_path / "escape.txt").exists()


def test_absolute_name_lands_inside(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "abs.tar.gz", [_file("/abs.txt", b"x"), _file("/etc/hostname", b"n")])
    with open_host(archive) as host:
        assert host.read("abs.txt") == "x"
        assert str(host.path("abs.txt")).startswith(str(host.root))


def test_link_escaping_then_write_through_refused(tmp_path: Path) -> None:
    link = tarfile.TarInfo("etc")
    link.type = tarfile.SYMTYPE
    link.linkname = str(tmp_path / "victim")
    (tmp_path / "victim").mkdir()
    archive = _tar(tmp_path / "bad.tar.gz", [(link, None), _file("etc/passwd", b"pwned")])
    with pytest.raises(InputError, match="unsafe member"):
        open_host(archive)
    assert list((tmp_path / "victim").iterdir()) == []


def test_device_node_refused(tmp_path: Path) -> None:
    dev = tarfile.TarInfo("dev/sda")
    dev.type = tarfile.BLKTYPE
    archive = _tar(tmp_path / "bad.tar.gz", [(dev, None)])
    with pytest.raises(InputError):
        open_host(archive)


@pytest.mark.parametrize("junk", [b"", b"\x00\x01binary junk" * 100, b"\x1f\x8b\x08truncated"])
def test_junk_is_one_clear_error(tmp_path: Path, junk: bytes) -> None:
    p = tmp_path / "junk.tar.gz"
    p.write_bytes(junk)
    # Not a tar: read as a pasted file, which it is not either (empty, binary, bad gzip).
    with pytest.raises(InputError, match=r"not a file dolmen reads|damaged gzip data"):
        open_host(p)


def test_truncated_archive(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "t", files={f"f{i}": "x" * 5000 for i in range(50)})
    archive = tmp_path / "full.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="t")
    data = archive.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="not a readable"):
        open_host(cut)
