"""interconnect.topology on the 8x H100 scenario with topo -m matrices (the real issue excerpts,
and one laid out like that scenario's sysfs with faults written in), and on a single L40S."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dolmen.checks.model import Finding, Status
from dolmen.host.command import command_key
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree, recording
from tests.hosts import scenarios

CHECK = "interconnect.topology"
TOPO = "commands/" + command_key(("nvidia-smi", "topo", "-m"))
BUS = ["53", "64", "75", "86", "97", "A8", "B9", "CA"]  # the scenario's GPUs, GPU0..GPU7
SUBJECTS = [f"gpu:00000000:{b}:00.0" for b in BUS]
CPUS = ["0-55,112-167"] * 4 + ["56-111,168-223"] * 4  # its sysfs local_cpulist per GPU


def hgx(cells: dict[tuple[int, int], str] | None = None, numa: dict[int, int] | None = None) -> str:
    """A topo -m of that scenario as driver 580 prints it: NV18 between all GPUs, NIC1..NIC8
    each on one GPU's PCIe switch (PIX), NIC0 a management port on neither; ``cells`` (GPU
    pair -> cell, both directions) and ``numa`` (GPU -> NUMA Affinity) write faults in."""
    cells, numa = cells or {}, numa or {}
    names = [f"GPU{i}" for i in range(8)] + [f"NIC{i}" for i in range(9)]
    lines = ["\t" + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]

    def gpu_nic(g: int, n: int) -> str:
        if n == 0:
            return "SYS"
        return "PIX" if n == g + 1 else ("NODE" if (n - 1) // 4 == g // 4 else "SYS")

    for g in range(8):
        row = [" X " if h == g else cells.get((g, h), cells.get((h, g), "NV18")) for h in range(8)]
        row += [cells.get((g, 100 + n), gpu_nic(g, n)) for n in range(9)]
        node = numa.get(g, g // 4)
        lines.append(f"GPU{g}\t" + "\t".join(row) + f"\t{CPUS[g]}\t{node}\t\tN/A")
    for n in range(9):
        row = [cells.get((g, 100 + n), gpu_nic(g, n)) for g in range(8)]
        row += [" X " if m == n else "SYS" for m in range(9)]
        lines.append(f"NIC{n}\t" + "\t".join(row))
    legend = "\n".join(f"  NIC{n}: mlx5_{n}" for n in range(9))
    return "\n".join(lines) + "\n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n" + legend + "\n"


@pytest.fixture
def h100(tmp_path: Path) -> Path:
    return scenarios.build("h100-hgx-healthy", tmp_path / "h100")


def _with(root: Path, text: str, rc: int = 0) -> dict[str, Finding]:
    (root / TOPO).write_text(text)
    if rc:
        (root / f"{TOPO}.rc").write_text(f"{rc}\n")
    return by_subject(run_check(root, CHECK))


def _excerpt(url_part: str) -> str:
    text = recording("nvidia-smi-topo/issues__topo-m-excerpts.md").read_text()
    blocks = dict(re.findall(r"^## (https://\S+).*?```\n(.*?)```", text, re.S | re.M))
    return next(b for url, b in blocks.items() if url_part in url)


def test_healthy_hgx_passes_every_gpu(h100: Path) -> None:
    found = _with(h100, hgx())
    assert set(found) == set(SUBJECTS)
    assert {f.status for f in found.values()} == {Status.PASS}
    f = found[SUBJECTS[3]]
    assert "NV18 to every peer" in f.summary and "NIC mlx5_4 at PIX" in f.summary
    assert "CPUs 0-55,112-167, NUMA node 0 as sysfs" in f.summary
    assert f.evidence["paths"]["GPU7"] == "NV18" and f.evidence["label"] == "GPU3"


def test_one_pair_without_nvlink_fails_naming_the_pair(h100: Path) -> None:
    found = _with(h100, hgx({(2, 5): "SYS"}))
    bad = {s for s, f in found.items() if f.status is Status.FAIL}
    assert bad == {SUBJECTS[2], SUBJECTS[5]}
    summary = found[SUBJECTS[5]].summary
    assert "GPU2-GPU5: SYS where their other peers are NVLink" in summary
    remedy = found[SUBJECTS[5]].remedy or ""
    assert "nvidia-smi nvlink" in remedy and "fabricmanager" in remedy
    assert found[SUBJECTS[0]].status is Status.PASS


def test_a_gpu_with_no_nvlink_path_fails_with_every_peer(h100: Path) -> None:
    found = _with(h100, hgx({(5, h): "NODE" if h < 4 else "SYS" for h in range(8) if h != 5}))
    assert {f.status for f in found.values()} == {Status.FAIL}
    assert found[SUBJECTS[5]].summary.count("where their other peers are NVLink") == 7
    assert "GPU0-GPU5: NODE" in found[SUBJECTS[0]].summary


def test_fewer_bonded_links_than_the_siblings_warns(h100: Path) -> None:
    found = _with(h100, hgx({(3, 6): "NV12"}))
    assert {s for s, f in found.items() if f.status is Status.WARN} == {SUBJECTS[3], SUBJECTS[6]}
    assert "GPU3-GPU6: NV12 where its siblings are NV18" in found[SUBJECTS[6]].summary


def test_gpu_without_a_nic_on_its_switch_warns(h100: Path) -> None:
    found = _with(h100, hgx({(4, 105): "NODE"}))  # NIC5 moved off GPU4's switch
    assert {s for s, f in found.items() if f.status is Status.WARN} == {SUBJECTS[4]}
    summary = found[SUBJECTS[4]].summary
    assert summary.startswith("GPU4: nearest NIC mlx5_5 is NODE: GPUDirect RDMA crosses the CPU")
    assert "lspci" in (found[SUBJECTS[4]].remedy or "")


def test_affinity_that_disagrees_with_sysfs_warns(h100: Path) -> None:
    found = _with(h100, hgx(numa={1: 1}))
    assert {s for s, f in found.items() if f.status is Status.WARN} == {SUBJECTS[1]}
    assert "NUMA node 1 in topo -m, 0 in sysfs" in found[SUBJECTS[1]].summary


def test_real_h100_matrix_nccl_1453(h100: Path) -> None:
    """The real 8x H100 matrix: all NV18, a PIX NIC each. It comes from another host (80 CPUs
    a socket), so its affinity disagrees with this scenario's sysfs, and says so."""
    found = _with(h100, _excerpt("NVIDIA/nccl/issues/1453"))
    assert {f.status for f in found.values()} == {Status.WARN}
    f = found[SUBJECTS[0]]
    assert "NV18 to every peer" in f.summary and "NIC NIC8 at PIX" in f.summary
    assert "CPUs 0-79 in topo -m, 0-55,112-167 in local_cpulist" in f.summary


def test_real_cut_paste_is_unknown_where_cut(h100: Path) -> None:
    """IBM's paste stops inside the GPU7 row: GPU7's NIC paths and affinity are unknown; GPU0,
    whose nearest of six NICs is NODE, warns."""
    found = _with(h100, _excerpt("IBM/pytorch-communication-benchmarks"))
    assert found[SUBJECTS[7]].status is Status.UNKNOWN
    assert "paths to 6 NIC(s) not read" in found[SUBJECTS[7]].summary
    assert found[SUBJECTS[0]].status is Status.WARN
    assert "nearest NIC NIC0 is NODE" in found[SUBJECTS[0]].summary


def test_not_in_the_bundle_skips_and_a_failure_is_unknown(h100: Path) -> None:
    (f,) = run_check(h100, CHECK)
    assert (f.status, f.summary) == (Status.SKIP, "not in this bundle: nvidia-smi topo -m")
    found = _with(h100, "Unable to determine the device handle for GPU0000:CA:00.0: Unknown\n", 15)
    assert found["host"].status is Status.UNKNOWN
    assert "command failed: nvidia-smi topo -m: exit 15" in found["host"].summary


def _l40s(tmp_path: Path, local_cpulist: str | None) -> list[Finding]:
    """One L40S (the real XML), the topo -m of the real L40S capture (CPUs 0-7, node 0), and
    the GPU's sysfs folder when ``local_cpulist`` is given."""
    name = "nvidia-smi-captures/nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80.txt"
    section = recording(name).read_text().split("# $ nvidia-smi topo -m\n", 1)[1]
    matrix = section.split("\n", 1)[1].split("\n####")[0]
    xml = recording("nvidia-smi-xml/k8s-test-infra__hardware__qx-l40s.xml").read_text()
    files: dict[str, str] = {}
    if local_cpulist is not None:
        dev = "sys/bus/pci/devices/0000:30:00.0"
        values = {"vendor": "0x10de", "device": "0x26b9", "class": "0x030200", "numa_node": "0"}
        files = {f"{dev}/{k}": f"{v}\n" for k, v in values.items()}
        files[f"{dev}/local_cpulist"] = f"{local_cpulist}\n"
    commands = {"nvidia-smi -q -x": xml, "nvidia-smi topo -m": matrix}
    return run_check(make_tree(tmp_path, files=files, commands=commands), CHECK)


def test_single_desktop_gpu(tmp_path: Path) -> None:
    (f,) = _l40s(tmp_path / "bare", None)
    assert f.status is Status.SKIP and f.subject == "gpu:00000000:30:00.0"
    assert f.summary == (
        "GPU0: nothing to judge: one GPU; affinity not compared (not in this bundle: sys/bus/pci)"
    )
    (f,) = _l40s(tmp_path / "sysfs", "0-7")
    assert f.status is Status.PASS and "CPUs 0-7, NUMA node 0 as sysfs" in f.summary
    (f,) = _l40s(tmp_path / "other", "0-3")
    assert f.status is Status.WARN and "CPUs 0-7 in topo -m, 0-3 in local_cpulist" in f.summary


def test_gpus_bridged_two_by_two_are_a_design_not_a_fault(h100: Path) -> None:
    """NVLink only within pairs (NVLink bridges on PCIe cards, a mesh): no GPU reaches most
    of its peers by NVLink, so the PCIe paths between pairs are not missing NVLink."""
    cells = {(a, b): "NV12" if a // 2 == b // 2 else "SYS" for a in range(8) for b in range(8)}
    found = _with(h100, hgx({k: v for k, v in cells.items() if k[0] != k[1]}))
    assert not [f for f in found.values() if f.status is Status.FAIL]
    assert found[SUBJECTS[0]].status is Status.PASS
    assert "NV12 to 1 of 7 peers" in found[SUBJECTS[0]].summary


def test_two_gpus_of_a_model_without_nvlink(tmp_path: Path) -> None:
    xml = recording("nvidia-smi-xml/openpai__nvidia_smi_sample_ecc_unsupported.xml").read_text()
    matrix = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tPHB\t0-11\nGPU1\tPHB\t X \t0-11\n"
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": xml, "nvidia-smi topo -m": matrix})
    findings = run_check(root, CHECK)
    assert len(findings) == 2 and {f.status for f in findings} == {Status.SKIP}
    assert "NVLink paths not judged" in findings[0].summary or "no NVLink" in findings[0].summary
    assert "not in this bundle: sys/bus/pci" in findings[0].summary
