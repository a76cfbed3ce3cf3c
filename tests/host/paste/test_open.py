"""``open_host(FILE)``: single files become partial trees, archives stay archives (a
sosreport mapped onto the tree format), and hostile inputs are one InputError each."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import tarfile
from pathlib import Path

import pytest

from dolmen.errors import ExitCode, InputError
from dolmen.host import RunStatus, open_host
from dolmen.host.archive import ArchiveHost
from dolmen.host.command import NOT_IN_BUNDLE
from dolmen.host.paste.tree import PasteHost
from tests.conftest import make_tree, recording
from tests.host.paste.test_detect import bug_report


def _meta(host: object) -> dict[str, object]:
    assert isinstance(host, (PasteHost, ArchiveHost))
    return json.loads(host.read("dolmen-snapshot.json"))


def test_xml_alone_is_a_partial_tree(tmp_path: Path) -> None:
    src = recording("nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml")
    with open_host(src) as host:
        assert isinstance(host, PasteHost)
        root = host.root
        res = host.run(["nvidia-smi", "-q", "-x"])
        assert res.ok and res.stdout == src.read_text()
        meta = _meta(host)
        assert meta["partial"] is True and meta["format"] == "dolmen.snapshot/1"
        assert meta["captured"] == {"commands": ["nvidia-smi%20-q%20-x"], "files": []}
        assert meta["source"]["detected"] == "nvidia-smi -q -x (8 GPUs)"  # type: ignore[index]
        assert host.detected == f"read nvidia-smi -q -x (8 GPUs) from {src}; a partial bundle"
        # Everything else says nothing of the host.
        other = host.run(["ibstat"])
        assert other.status is RunStatus.UNRECORDED
        assert other.failure() == f"{NOT_IN_BUNDLE}: ibstat"
        assert host.absent("proc/modules") == NOT_IN_BUNDLE
        assert host.describe()["source"] == meta["source"]
    assert not root.exists()  # close() removed the private folder


@pytest.mark.parametrize("pack", [gzip.compress, lzma.compress])
def test_compressed_kernel_log(tmp_path: Path, pack: object) -> None:
    text = recording("kernel-logs/gpud__kmsg.1.log").read_bytes()
    path = tmp_path / "kmsg.log.gz"
    path.write_bytes(pack(text))  # type: ignore[operator]
    with open_host(path) as host:
        assert host.run(["dmesg"], key="dmesg").stdout == text.decode()
        assert _meta(host)["source"]["compression"] in ("gzip", "xz")  # type: ignore[index]


def test_truncated_gzip_keeps_what_came_out(tmp_path: Path) -> None:
    text = recording("kernel-logs/gpud__dmesg.decode.iso.log.1").read_bytes()
    packed = gzip.compress(text)
    path = tmp_path / "dmesg.gz"
    path.write_bytes(packed[: len(packed) // 2])
    with open_host(path) as host:
        got = host.run(["dmesg"], key="dmesg").stdout
        assert 0 < len(got) < len(text) and text.decode().startswith(got)


def test_journal_json_becomes_kernel_log_text(tmp_path: Path) -> None:
    records = [
        {"__REALTIME_TIMESTAMP": "1737133843000000", "_TRANSPORT": "kernel",
         "_HOSTNAME": "n7", "MESSAGE": "NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off"},
        {"__REALTIME_TIMESTAMP": "1737133844000000", "_TRANSPORT": "syslog",
         "SYSLOG_IDENTIFIER": "cron", "MESSAGE": "not the kernel"},
        {"__REALTIME_TIMESTAMP": "1737133845000000", "_TRANSPORT": "kernel",
         "MESSAGE": [78, 86, 82, 77, 58, 32, 255]},
    ]  # fmt: skip
    path = tmp_path / "journal.json"
    path.write_text("\n".join(json.dumps(r) for r in records) + '\n{"cut')
    with open_host(path) as host:
        log = host.run(["dmesg"], key="dmesg").stdout
    assert log.splitlines() == [
        "2025-01-17T17:10:43+0000 n7 kernel: NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off",
        "2025-01-17T17:10:45+0000 localhost kernel: NVRM: \ufffd",
    ]


def test_nvidia_smi_error_is_a_failed_command(tmp_path: Path) -> None:
    path = tmp_path / "smi.txt"
    path.write_text(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    with open_host(path) as host:
        for argv in (["nvidia-smi", "-q", "-x"], ["nvidia-smi"]):
            res = host.run(argv)
            assert res.status is RunStatus.FAILED and res.rc == 9
            assert "couldn't communicate" in res.describe()


def test_capture_is_split(tmp_path: Path) -> None:
    rel = "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt"
    with open_host(recording(rel)) as host:
        names = sorted(host.listdir("commands"))
        assert names == [
            "nvidia-smi",
            "nvidia-smi%20-q",
            "nvidia-smi%20nvlink%20-s",
            "nvidia-smi%20topo%20-m",
        ]
        assert host.run(["nvidia-smi", "-q"]).stdout.lstrip().startswith("==============NVSMI")
        assert "nvidia-smi -q" in str(host.detected)


def test_bug_report(tmp_path: Path) -> None:
    with open_host(bug_report(tmp_path)) as host:
        assert isinstance(host, PasteHost)
        assert host.run(["nvidia-smi", "-q"]).ok
        assert host.run(["lspci", "-vvv"]).stdout.startswith("0001:00:00.0 3D controller")
        assert host.run(["dmesg"], key="dmesg").stdout.startswith("kern  :warn  :")
        assert host.read("proc/modules").startswith("nvidia_uvm ")
        line = str(host.detected)
        assert line.startswith("read nvidia-bug-report.log (") and "dmesg" in line


def _tar(members: dict[str, bytes], mode: str = "w:xz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:  # type: ignore[call-overload]
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def sosreport(tmp_path: Path) -> Path:
    """A sosreport laid out as sos writes it, from real recordings."""
    top = "sosreport-gpu07-2025-01-21-abcdef"
    q = recording("nvidia-smi-text/gpud__nvidia-smi-query.535.161.08.out.0.valid").read_bytes()
    members = {
        f"{top}/sos_commands/nvidia/nvidia-smi_-q": q,
        f"{top}/sos_commands/nvidia/nvidia-smi_-q_-d_ECC": b"==============NVSMI LOG====\n",
        f"{top}/sos_commands/nvidia/nvidia-smi_--list-gpus": b"GPU 0: x\n",
        f"{top}/sos_commands/nvidia/nvidia-smi_nvlink_-s": recording(
            "nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a100"
        ).read_bytes(),
        f"{top}/sos_commands/kernel/dmesg": recording(
            "kernel-logs/gpud__dmesg.decode.iso.log.0"
        ).read_bytes(),
        f"{top}/sos_commands/pci/lspci_-nnvv": recording("lspci/gpud__lspci-vvv").read_bytes(),
        f"{top}/sos_commands/pci/lspci_-tv": b"-[0000:00]-+-00.0\n",
        f"{top}/sos_commands/infiniband/ibstat": recording(
            "infiniband/gpud__ibstat.47.0.h100.some.down.0"
        ).read_bytes(),
        f"{top}/proc/meminfo": b"MemTotal:       2113504388 kB\n",
        f"{top}/etc/hostname": b"gpu07\n",
    }
    path = tmp_path / f"{top}.tar.xz"
    path.write_bytes(_tar(members))
    return path


def test_sosreport_is_mapped(tmp_path: Path) -> None:
    with open_host(sosreport(tmp_path)) as host:
        assert isinstance(host, ArchiveHost)
        assert sorted(host.listdir("commands")) == [
            "dmesg",
            "ibstat",
            "lspci%20-vvv",
            "nvidia-smi%20-q",
            "nvidia-smi%20nvlink%20-s",
        ]
        assert host.run(["nvidia-smi", "-q"]).stdout.count("\nGPU 0000") == 8  # not -d ECC
        assert host.read("proc/meminfo").startswith("MemTotal:")
        assert host.hostname == "gpu07"
        meta = _meta(host)
        assert meta["partial"] is True and host.absent("sys/bus/pci") == NOT_IN_BUNDLE
        assert host.run(["ldconfig", "-p"]).status is RunStatus.UNRECORDED
        assert str(host.detected).startswith("read a sosreport (5 outputs dolmen reads)")


def test_snapshot_archive_stays_whole(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "t" / "node1", commands={"ibstat": "CA 'mlx5_0'\n"})
    (tree / "dolmen-snapshot.json").write_text('{"format": "dolmen.snapshot/1"}')
    path = tmp_path / "snap.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(tree, arcname="node1")
    with open_host(path) as host:
        assert isinstance(host, ArchiveHost) and host.detected is None
        assert not host.partial and host.absent("sys/bus/pci") == NOT_IN_BUNDLE  # no sys/


# --- hostile and junk inputs: one InputError each (exit code 2) ------------------------


def _refused(path: Path, words: str) -> None:
    with pytest.raises(InputError) as e:
        open_host(path)
    assert words in str(e.value) and e.value.exit_code is ExitCode.UNDECIDED
    assert e.value.hint
    assert "\n" not in str(e.value)


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e").write_bytes(b"")
    _refused(tmp_path / "e", "not a file dolmen reads (it is empty)")


def test_binary_junk(tmp_path: Path) -> None:
    (tmp_path / "j").write_bytes(os.urandom(1 << 16).replace(b"\x1f\x8b", b"xx"))
    _refused(tmp_path / "j", "binary data")


def test_markdown_is_refused(tmp_path: Path) -> None:
    _refused(recording("dcgm/issues__dcgmi-diag-excerpts.md"), "a Markdown document")


def test_gzip_bomb_is_bounded(tmp_path: Path) -> None:
    # 1 GiB of zeros as 1024 gzip members of 1 MiB each (gunzip reads them as one file):
    # about a megabyte on disk, made in milliseconds.
    bomb = gzip.compress(b"\0" * (1 << 20), compresslevel=9) * 1024
    assert len(bomb) < 2 << 20
    (tmp_path / "bomb.gz").write_bytes(bomb)
    _refused(tmp_path / "bomb.gz", "decompresses to more than 64 MiB")


def test_gigabyte_member_in_a_tar_is_refused(tmp_path: Path) -> None:
    # What a sparse gigabyte looks like to the reader: a header saying 1 GiB. The headers
    # are checked before anything is extracted, so the body never has to be there.
    info = tarfile.TarInfo("x/commands/dmesg")
    info.size = 1 << 30
    (tmp_path / "s.tar.gz").write_bytes(gzip.compress(info.tobuf(tarfile.GNU_FORMAT)))
    _refused(tmp_path / "s.tar.gz", "larger than any support bundle")


def test_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "f")
    _refused(tmp_path / "f", "a FIFO")


def test_symlink_loop_and_dangling(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    _refused(tmp_path / "a", "link loop")
    os.symlink(tmp_path / "nothing", tmp_path / "d")
    _refused(tmp_path / "d", "link to nothing")


def test_tar_with_dotdot_names(tmp_path: Path) -> None:
    path = tmp_path / "evil.tar.gz"
    path.write_bytes(_tar({"../../escaped": b"x", "t/commands/dmesg": b"x"}, "w:gz"))
    _refused(path, "unsafe member")
    assert not (tmp_path.parent / "escaped").exists()


def test_sosreport_links_are_not_outputs(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("s/sos_commands/kernel/", "s/proc/"):
            info = tarfile.TarInfo(name.rstrip("/"))
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        link = tarfile.TarInfo("s/sos_commands/kernel/dmesg")
        link.type, link.linkname = tarfile.SYMTYPE, "../../proc/meminfo"
        tar.addfile(link)
    path = tmp_path / "sos.tar.gz"
    path.write_bytes(buf.getvalue())
    with open_host(path) as host:
        assert host.run(["dmesg"], key="dmesg").status is RunStatus.UNRECORDED


def test_extracted_sosreport_folder_is_read_in_place(tmp_path: Path) -> None:
    with tarfile.open(sosreport(tmp_path)) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    (folder,) = (tmp_path / "x").iterdir()
    before = sorted(p.name for p in folder.iterdir())
    with open_host(folder) as host:
        assert host.kind == "sosreport" and host.partial
        assert host.run(["nvidia-smi", "-q"]).stdout.count("\nGPU 0000") == 8
        assert host.run(["dmesg"], key="dmesg").ok
        assert host.run(["ldconfig", "-p"]).status is RunStatus.UNRECORDED
        assert host.absent("sys/bus/pci/devices") == NOT_IN_BUNDLE
        assert host.read("proc/meminfo").startswith("MemTotal:")
        assert str(host.detected).startswith("read a sosreport (5 outputs dolmen reads)")
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written there


def test_sosreport_folder_link_out_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "dmesg").write_text("NVRM: Xid 79\n")
    folder = tmp_path / "sos"
    (folder / "sos_commands").mkdir(parents=True)
    os.symlink(outside, folder / "sos_commands" / "kernel")
    (folder / "proc").mkdir()
    with open_host(folder) as host:
        assert host.run(["dmesg"], key="dmesg").status is RunStatus.UNRECORDED


def test_capture_prefers_the_exact_command(tmp_path: Path) -> None:
    q = recording("nvidia-smi-text/gpud__nvidia-smi-query.535.129.03.out.0.valid.a10").read_text()
    rule = "#" * 80 + "\n"
    text = (
        f"{rule}# capture\n{rule}x\n"
        f"{rule}# ecc\n# $ nvidia-smi -q -d ECC\n{rule}==============NVSMI LOG==============\nECC\n"
        f"{rule}# whole\n# $ nvidia-smi --query\n{rule}{q}"
        f"{rule}# again\n# $ nvidia-smi -q\n{rule}==============NVSMI LOG==============\nlater\n"
    )
    path = tmp_path / "capture.txt"
    path.write_text(text)
    with open_host(path) as host:
        assert host.run(["nvidia-smi", "-q"]).stdout == q  # not -d ECC, not the later one
        assert _meta(host)["source"]["sections"] == ["nvidia-smi -q"]  # type: ignore[index]


def test_the_linker_cache_is_placed_as_its_bytes(tmp_path: Path) -> None:
    """etc/ld.so.cache, binary: at its path, byte for byte (decoding would corrupt it); a cut
    one is placed too, and its reader says it is not whole."""
    from dolmen.facts.stack import collect

    src = recording("cuda-env/nvidia-container-toolkit__rootfs-1__ld.so.cache")
    with open_host(src) as host:
        assert host.read_bytes("etc/ld.so.cache") == src.read_bytes()
        assert _meta(host)["captured"] == {"commands": [], "files": ["etc/ld.so.cache"]}
        stack = collect(host)
        assert stack.libraries_source == "etc/ld.so.cache" and stack.libraries is not None
        assert stack.driver_installed() is not None
    cut = tmp_path / "ld.so.cache"
    cut.write_bytes(src.read_bytes()[:20000])
    with open_host(cut) as host:
        stack = collect(host)
        assert stack.libraries is None
        assert stack.unread["libraries"].startswith("malformed: etc/ld.so.cache")
        assert stack.driver_installed() is None
