"""The paste detector on every real recording (../shared/recordings): each file's kind,
written from the file itself (its banner, its first lines) and PROVENANCE.md, with the
count the detected line shows (GPUs, HCAs, lines); plus truncated, junk and hostile text."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dolmen.host.paste.detect import KINDS, detect
from dolmen.host.paste.sections import split_bug_report, split_capture, tree_argv
from tests.conftest import RECORDINGS, recording

# (recording, kind or None for "not a file dolmen reads", count). Markdown excerpt pages,
# READMEs, the binary ld.so.cache, GCM's sysfs JSON, ttar archives, dmidecode (dolmen does
# not read it) and the empty A10 `nvlink -s` are refused; everything else is one kind.
TABLE: list[tuple[str, str | None, int | None]] = [
    ("PROVENANCE.md", None, None),
    ("cuda-env/issues__cdi-spec-excerpts.md", None, None),
    ("cuda-env/issues__nvcc-version-excerpts.md", None, None),
    ("cuda-env/nvidia-container-toolkit__rootfs-1__ld.so.cache", None, None),
    ("cuda-env/nvidia-container-toolkit__rootfs-1__ldconfig-p.txt", "ldconfig", None),
    ("cuda-env/openpai__daemon-openpai-nvidia-runtime.json", "docker-daemon", None),
    ("dcgm/issues__dcgmi-diag-excerpts.md", None, None),
    ("fabric-manager/gpud__fabric-manager.0.log", "fm-log", 499),
    ("fabric-manager/gpud__fabricmanager.log", "fm-log", 102),
    ("host/gpud__dmidecode", None, None),
    ("infiniband/gpud__ibstat.39.0.a100.failed.ibpanic.exit-255.0", "ibstat", 8),
    ("infiniband/gpud__ibstat.47.0.a100.all.active.0", "ibstat", 9),
    ("infiniband/gpud__ibstat.47.0.h100.all.active.0", "ibstat", 12),
    ("infiniband/gpud__ibstat.47.0.h100.all.active.2", "ibstat", 9),
    ("infiniband/gpud__ibstat.47.0.h100.some.down.0", "ibstat", 12),
    ("infiniband/gpud__ibstat.47.0.h100.some.down.with.polling.1", "ibstat", 12),
    ("infiniband/gpud__ibstatus.39.0.a100.all.active.0", "ibstatus", 9),
    ("kernel-logs/azurehpc__0flap_syslog", "kernel-log", 2),
    ("kernel-logs/gpud__dmesg-time-format-iso.log", "kernel-log", 41),
    ("kernel-logs/gpud__dmesg-time-format-short-iso.log", "kernel-log", 11),
    ("kernel-logs/gpud__dmesg.decode.iso.log.0", "kernel-log", 636),
    ("kernel-logs/gpud__dmesg.decode.iso.log.1", "kernel-log", 2382),
    ("kernel-logs/gpud__dmesg.peermem.log.0", "kernel-log", 8),
    ("kernel-logs/gpud__journalctl-time-format-short-iso-2.log", "kernel-log", 47),
    ("kernel-logs/gpud__kmsg.1.log", "kernel-log", 47),
    ("kernel-logs/gpud__kmsg.2.peermem.log", "kernel-log", 8),
    ("kernel-logs/gpud__memory_dmesg.decode.iso.log", "kernel-log", 24),
    ("kernel-logs/gpud__nccl_dmesg.decode.iso.log", "kernel-log", 2),
    ("kernel-logs/gpud__os_dmesg.decode.iso.log", "kernel-log", 2),
    ("kernel-logs/gpud__pstore_7530486857247_dmesg.txt", "kernel-log", 416),
    ("kernel-logs/gpud__pstore_dmesg-erst.txt", "kernel-log", 39),
    ("kernel-logs/issues__xid-excerpts.md", None, None),
    ("lspci/gpud__lspci-vvv", "lspci", 8),
    ("lspci/gpud__lspci.gb200", "lspci", 4),
    ("lspci/gpud__lspci.nn.a10", "lspci", 1),
    ("lspci/gpud__lspci.nn.a100", "lspci", 8),
    ("nvidia-smi-captures/nvidia_gpu_exporter__README.md", None, None),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt",
        "capture",
        25,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.txt",
        "capture",
        26,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt",
        "capture",
        25,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
        "capture",
        26,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-mig__590.48.01.txt",
        "capture",
        26,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h200-mig__590.48.01.txt",
        "capture",
        25,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt",
        "capture",
        25,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80.txt",
        "capture",
        25,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt",
        "capture",
        25,
    ),
    (
        "nvidia-smi-captures/nvidia_gpu_exporter__windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt",
        "capture",
        25,
    ),
    ("nvidia-smi-nvlink/azurehpc__bad_nvlink_status_a100.txt", "nvlink", 1),
    ("nvidia-smi-nvlink/azurehpc__good_nvlink_status_a100.txt", "nvlink", 1),
    ("nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a10", None, None),
    ("nvidia-smi-nvlink/gpud__nvidia-smi.nvlink.status.a100", "nvlink", 8),
    ("nvidia-smi-text/azurehpc__orig_nvsmi8_output.txt", "nvsmi-q", 8),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.129.03.out.0.valid.a10", "nvsmi-q", 1),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.154.05.out.0.valid", "nvsmi-q", 8),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.154.05.out.0.valid.4090", "nvsmi-q", 8),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.154.05.out.1.valid", "nvsmi-q", 8),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.154.05.out.2.valid", "nvsmi-q", 8),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.154.05.out.3.valid", "nvsmi-q", 8),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.161.08.out.0.valid", "nvsmi-q", 8),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.183.01.out.0.invalid", "nvsmi-q", 1),
    ("nvidia-smi-text/gpud__nvidia-smi-query.535.183.01.out.0.valid", "nvsmi-q", 8),
    ("nvidia-smi-text/gpud__nvidia-smi-query.560.35.03.out.0.valid", "nvsmi-q", 1),
    ("nvidia-smi-text/gpud__nvidia-smi.525.125.06.out.0.valid", "nvsmi-table", 1),
    ("nvidia-smi-text/gpud__nvidia-smi.550.90.07.out.0.valid", "nvsmi-table", 8),
    ("nvidia-smi-topo/issues__topo-m-excerpts.md", None, None),
    ("nvidia-smi-xml/datakit__gtx-1050-1.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/datakit__gtx-1card.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/k8s-test-infra__hardware__README.md", None, None),
    ("nvidia-smi-xml/k8s-test-infra__hardware__qx-a100.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/k8s-test-infra__hardware__qx-gb200.xml", "nvsmi-xml", 4),
    ("nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml", "nvsmi-xml", 8),
    ("nvidia-smi-xml/k8s-test-infra__hardware__qx-l40s.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/k8s-test-infra__hardware__qx-t4.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/openpai__nvidia_smi_out_of_order.xml", "nvsmi-xml", 4),
    ("nvidia-smi-xml/openpai__nvidia_smi_outdated_gpu.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/openpai__nvidia_smi_sample.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml/openpai__nvidia_smi_sample_ecc_unsupported.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml/telegraf__3090-v13.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__a100-sxm4-v12.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__a10g.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__dual_2070-v13.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml/telegraf__dual_2080-v13.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml/telegraf__gt-1030.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__gtx-1070-ti.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__gtx-1660-ti.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__pro-6000-maxq-blackwell-v13.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__quadro-p2000-v12.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__quadro-p400.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__rtx-3060-v12.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__rtx-3080-v12.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__rtx-3080-v13.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__rtx-3090-v12.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__rtx-4000-sff-ada-v13.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__tesla-t4.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml/telegraf__tesla_p4.xml", "nvsmi-xml", 1),
    ("nvidia-smi-xml-mock/k8s-test-infra__README.md", None, None),
    ("nvidia-smi-xml-mock/k8s-test-infra__qx-a100-healthy.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-ecc-injected.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-fabric-degraded.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-healthy.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-lost.xml", "nvsmi-xml", 2),
    ("nvidia-smi-xml-mock/k8s-test-infra__qx-gb200-throttle-counters.xml", "nvsmi-xml", 2),
    ("procfs/procfs__fixtures.ttar", None, None),
    ("sysfs/gcm__DGX_A100.json", None, None),
    ("sysfs/gcm__learn_good.json", None, None),
    ("sysfs/gcm__learn_ib_intf_bad_rate.json", None, None),
    ("sysfs/gcm__learn_ib_intf_operstate_down.json", None, None),
    ("sysfs/gcm__learn_stuck_ib_intf.json", None, None),
    ("sysfs/node_exporter__sys.ttar", None, None),
]

_SKIPPED = ("_extracted/", "sys-class-infiniband")


def _files() -> list[str]:
    if not RECORDINGS.is_dir():
        return []
    return sorted(
        str(p.relative_to(RECORDINGS))
        for p in RECORDINGS.rglob("*")
        if p.is_file() and not any(s in str(p) for s in _SKIPPED)
    )


def test_the_table_names_every_recording() -> None:
    if not RECORDINGS.is_dir():
        pytest.skip(f"real recordings not available: {RECORDINGS} is absent")
    assert _files() == sorted(r for r, _, _ in TABLE)


@pytest.mark.parametrize(("rel", "kind", "count"), TABLE, ids=[r for r, _, _ in TABLE])
def test_detect_recording(rel: str, kind: str | None, count: int | None) -> None:
    text = recording(rel).read_bytes().decode("utf-8", errors="replace")
    found = detect(text)
    assert (found.kind.name if found else None) == kind
    if found is not None:
        assert found.count == count


@pytest.mark.parametrize(
    "rel",
    [
        "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml",
        "nvidia-smi-text/gpud__nvidia-smi-query.535.161.08.out.0.valid",
        "infiniband/gpud__ibstat.47.0.h100.some.down.0",
        "kernel-logs/gpud__kmsg.1.log",
        "lspci/gpud__lspci.nn.a100",
    ],
)
def test_truncated_keeps_its_kind(rel: str) -> None:
    text = recording(rel).read_text(errors="replace")
    whole = detect(text)
    assert whole is not None
    cut = detect(text[: max(len(text) // 7, 400)])
    assert cut is not None and cut.kind == whole.kind


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n   \n",
        "\x00\x01\x02binary\xff" * 100,
        "hello world\nthis is a note\n",
        "{not json",
        "<html><body>nvidia-smi</body></html>",
        "# Title\n\n```\n6,1,2,-;NVRM: Xid (PCI:0000:19:00): 48\n```\n\n```\nx\n```\n",
        "GPU 0: NVIDIA A100 (UUID: GPU-1)\n",  # nvidia-smi -L: not read
        "a" * 200_000,
    ],
)
def test_junk_is_no_kind(text: str) -> None:
    assert detect(text) is None


def test_small_hand_made_inputs() -> None:
    kmsg = "6,1234,5678,-;NVRM: Xid (PCI:0000:19:00): 48, pid=1, DBE\n"
    assert (k := detect(kmsg)) is not None and k.kind.name == "kernel-log"
    # /dev/kmsg records with their dictionaries: the KEY=value lines are the record's tail
    with_dict = "".join(
        f"3,{i},{i * 10},-;mlx5_core 0000:0{i}:00.0: port down\n SUBSYSTEM=pci\n DEVICE=+pci:0\n"
        for i in range(5)
    )
    assert (k := detect(with_dict)) is not None and k.kind.name == "kernel-log"
    prompt = (
        "$ sudo dmesg -T\n[Tue Jan 21 02:21:33 2025] NVRM: Xid 79\n[Tue Jan 21 02:21:34 2025] x\n"
    )
    assert (k := detect(prompt)) is not None and k.kind.name == "kernel-log"
    syslog = "Aug 17 00:00:24.123456 n7 kernel: ib6: lost carrier\n" * 3
    # journal lines whose time and host were cut, as pasted into an issue
    cut = "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1, name=python3, Ch 00000001\n" * 3
    assert (k := detect(cut)) is not None and k.kind.name == "kernel-log"
    assert (k := detect(syslog)) is not None and k.kind.name == "kernel-log"
    devinfo = "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t28.39.1002\n"
    assert (d := detect(devinfo)) is not None and d.kind.name == "ibv_devinfo"
    journal = '{"__REALTIME_TIMESTAMP":"1700000000000000","MESSAGE":"NVRM: Xid 79"}\n'
    assert (j := detect(journal)) is not None and j.kind.name == "journal-json"
    failed = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    assert (f := detect(failed)) is not None and f.kind.name == "nvsmi-failed"
    dcgm = '{"DCGM Diagnostic": {"test_categories": ['  # truncated: still a diag
    assert (g := detect(dcgm)) is not None and g.kind.name == "dcgm-diag"
    topo = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV18\t0-55\t0\n"
    assert (t := detect(topo)) is not None and t.kind.name == "topo" and t.count == 1
    # GPUs without links: the line after "GPU n:" says why (no NVLink, MIG mode)
    for why in ("Device does not have or support Nvlink", "Nvlink queries are not supported"):
        text = f"GPU 0: NVIDIA L40S (UUID: GPU-1)\n{why} for Devices in MIG mode\n"
        assert (n := detect(text)) is not None and n.kind.name == "nvlink" and n.count == 1
    kmd = (
        "| NVIDIA-SMI 610.62                 KMD Version: 610.62        CUDA UMD Version: 13.3 |\n"
    )
    assert (m := detect(kmd)) is not None and m.kind.name == "nvsmi-table"
    daemon = '{\n  "default-runtime": "nvidia",\n  "runtimes": {'  # truncated: still one
    assert (d := detect(daemon)) is not None and d.kind.name == "docker-daemon"
    assert detect('{\n  "log-driver": "json-file"\n}') is None  # no runtime: not ours
    cdi = "---\ncdiVersion: 0.5.0\ncontainerEdits:\n  deviceNodes:\n"
    assert (c := detect(cdi)) is not None and c.kind.name == "cdi-spec"
    assert detect("cdiVersion: 0.5.0\n") is None  # a version line alone is no spec


def test_describe_line() -> None:
    text = recording("nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml").read_text()
    found = detect(text)
    assert found is not None and found.describe() == "nvidia-smi -q -x (8 GPUs)"
    assert set(KINDS) >= {"nvsmi-xml", "nvsmi-q", "nvsmi-table", "lspci", "kernel-log"}


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ("/usr/bin/nvidia-smi --query", ("nvidia-smi", "-q")),
        ("nvidia-smi -q -d ECC", ("nvidia-smi", "-q")),
        ("nvidia-smi --query --unit", None),
        ("nvidia-smi -q -x", ("nvidia-smi", "-q", "-x")),
        ("nvidia-smi ", ("nvidia-smi",)),
        ("nvidia-smi topo -m", ("nvidia-smi", "topo", "-m")),
        ("nvidia-smi nvlink -s", ("nvidia-smi", "nvlink", "-s")),
        ("nvidia-smi -L", None),
        ("dmesg:", ("dmesg",)),
        ("journalctl -k -o short-iso", ("dmesg",)),
        ("journalctl -b 0", None),
        ("/sbin/lspci -nn", ("lspci", "-vvv")),
        ('/usr/bin/lspci -d "10de:*" -v -xxx', None),
        ("lspci -t", None),
        ("ibv_devinfo -v", ("ibv_devinfo",)),
        ("dcgmi diag -r 3 -j", ("dcgmi", "diag", "-j")),
        ("dcgmi diag -r 3", None),
        ('unbalanced "quote', None),
    ],
)
def test_tree_argv(line: str, argv: tuple[str, ...] | None) -> None:
    assert tree_argv(line) == argv


def test_split_capture() -> None:
    rel = "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
    sections = split_capture(recording(rel).read_text())
    read = [s for s in sections if s.argv is not None]
    assert [s.argv for s in read] == [
        ("nvidia-smi", "topo", "-m"),
        ("nvidia-smi", "nvlink", "-s"),
        ("nvidia-smi",),
        ("nvidia-smi", "-q"),
        ("nvidia-smi",),
        ("nvidia-smi", "-q"),
    ]
    q = read[3].text
    assert q.startswith("\n==============NVSMI LOG") or q.lstrip().startswith("====")
    assert "################" not in q and "# $ " not in q
    assert read[1].text.startswith("GPU 0: NVIDIA H100 80GB HBM3")


def bug_report(tmp_path: Path) -> Path:
    """A bug report laid out as nvidia-bug-report.sh writes it, from real recordings."""
    rule = "____________________________________________\n\n"
    q = recording("nvidia-smi-text/gpud__nvidia-smi-query.535.161.08.out.0.valid").read_text()
    dmesg = recording("kernel-logs/gpud__dmesg.decode.iso.log.0").read_text()
    lspci = recording("lspci/gpud__lspci.nn.a100").read_text()
    parts = [
        rule + "Start of NVIDIA bug report log file.  Please include this file, along\n"
        "with a detailed description of your problem.\n\nnvidia-bug-report.sh Version: 1\n\n",
        rule + "*** /etc/issue\n*** ls: -rw-r--r-- 1 root root 26 2024-01-01 /etc/issue\n"
        "Ubuntu 22.04.4 LTS \\n \\l\n\n",
        rule + "*** /proc/modules\n*** ls: -r--r--r-- 1 root root 0 /proc/modules\n"
        "nvidia_uvm 1437696 0 - Live 0x0000000000000000 (POE)\n"
        "nvidia 56512512 1 nvidia_uvm, Live 0x0000000000000000 (POE)\n\n",
        rule + '/usr/bin/lspci -d "10de:*" -v -xxx\n\n00:00.0 junk: only NVIDIA\n\n',
        rule + "/usr/bin/lspci -t\n\n-[0000:00]-+-00.0\n\n",
        rule + "/usr/bin/lspci -nn\n\n" + lspci,
        rule + "Scanning kernel log files for NVIDIA kernel messages:\n\n  journalctl -b -0:\n\n",
        rule + "dmesg:\n\n" + dmesg,
        rule + "/usr/bin/nvidia-smi --query\n\n" + q + "\n/usr/bin/nvidia-smi --query --unit\n\n"
        "==============NVSMI LOG==============\n\nAttached Units : 0\n\n",
        rule + "\nEnd of NVIDIA bug report log file.\n",
    ]
    path = tmp_path / "nvidia-bug-report.log.gz"
    path.write_bytes(gzip.compress("".join(parts).encode()))
    return path


def test_split_bug_report(tmp_path: Path) -> None:
    text = gzip.decompress(bug_report(tmp_path).read_bytes()).decode()
    found = detect(text)
    assert found is not None and found.kind.name == "bug-report"
    sections = split_bug_report(text)
    placed = {s.argv: s.text for s in sections if s.argv is not None}
    assert set(placed) == {("lspci", "-vvv"), ("dmesg",), ("nvidia-smi", "-q")}
    assert "Attached Units" not in placed[("nvidia-smi", "-q")]  # --query --unit is apart
    assert placed[("nvidia-smi", "-q")].startswith("==============NVSMI LOG")
    assert placed[("dmesg",)].startswith("kern  :warn  :")
    files = {s.path: s.text for s in sections if s.path is not None}
    assert files["proc/modules"].startswith("nvidia_uvm ") and "etc/issue" in files
