"""slurm/conf_gen.py and setup/node.py: the node line and gres.conf from real inputs.

Tables of real recordings (../shared/recordings: cpuinfo, nvidia-smi XML of eight boards)
and of the scenario host trees (tests/hosts), plus cut, junk and hostile inputs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dolmen.host import open_host
from dolmen.setup.node import node_shape
from dolmen.slurm.conf_gen import (
    NodeGpu,
    NotGenerated,
    cores_of,
    gres_conf,
    gres_type,
    node_line,
    node_name,
    parse_core_map,
    render,
    shape,
)
from tests.conftest import make_tree, recording
from tests.hosts import scenarios

PROCFS_CPUINFO = "procfs/procfs__fixtures_extracted/fixtures/proc/cpuinfo"


def test_core_map_of_a_real_cpuinfo_numbers_smt_siblings_as_their_core() -> None:
    # i7-8650U: 4 cores, 8 CPUs; CPUs 4-7 are the siblings of 0-3 (physical id 0 each).
    text = recording(PROCFS_CPUINFO).read_text()
    assert parse_core_map(text) == {0: 0, 1: 1, 2: 2, 3: 3, 4: 0, 5: 1, 6: 2, 7: 3}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # two sockets whose core ids restart at 0: socket 1's cores come after socket 0's
        (
            "processor: 0\nphysical id: 0\ncore id: 0\n\nprocessor: 1\nphysical id: 1\n"
            "core id: 0\n\nprocessor: 2\nphysical id: 0\ncore id: 0\n",
            {0: 0, 1: 1, 2: 0},
        ),
        # gaps in core ids (Intel skips some): logical indices are dense
        (
            "processor: 0\nphysical id: 0\ncore id: 8\n\nprocessor: 1\nphysical id: 0\ncore id: 2\n",
            {0: 1, 1: 0},
        ),
        ("", {}),  # empty
        ("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n", {}),  # arm64: no ids
        ("processor: 0\nphysical id: 0\ncore id", {}),  # cut inside a block
        ("processor: x\nphysical id: 0\ncore id: 0\n", {}),  # junk numbers
        ("\x00\xff" * 50, {}),  # binary junk
    ],
)
def test_core_map_table(text: str, expected: dict[int, int]) -> None:
    assert parse_core_map(text) == expected


def test_cores_of_is_none_when_any_cpu_is_unknown() -> None:
    assert cores_of([0, 4], {0: 0, 4: 0}) == (0,)
    assert cores_of([0, 9], {0: 0}) is None


@pytest.mark.parametrize(
    ("xml", "expected"),
    [
        ("k8s-test-infra__hardware__qx-h100.xml", "h100"),
        ("k8s-test-infra__hardware__qx-a100.xml", "a100"),
        ("k8s-test-infra__hardware__qx-l40s.xml", "l40s"),
        ("k8s-test-infra__hardware__qx-t4.xml", "t4"),
        ("k8s-test-infra__hardware__qx-gb200.xml", "gb200"),
        ("telegraf__3090-v13.xml", "rtx_3090"),  # no kb row: the name without vendor words
        ("telegraf__quadro-p400.xml", "p400"),
        ("telegraf__pro-6000-maxq-blackwell-v13.xml", "rtx_pro_6000_blackwell_maxq"),
    ],
)
def test_gres_type_of_real_boards(tmp_path: Path, xml: str, expected: str) -> None:
    text = recording(f"nvidia-smi-xml/{xml}").read_text()
    tree = make_tree(tmp_path, commands={"nvidia-smi -q -x": text})
    s = node_shape(open_host(tree), "n1")
    assert s.gpus and {g.type for g in s.gpus} == {expected}
    # the tree has no cpuinfo nor meminfo: no line, and the reason names what is missing
    with pytest.raises(NotGenerated, match=r"Sockets: .*RealMemory"):
        node_line(s)


def test_gres_type_falls_back_to_the_name_and_stays_a_word() -> None:
    assert gres_type("NVIDIA Some/New GPU!") == "some_new_gpu"
    assert gres_type("") == "gpu" and gres_type(None) == "gpu"
    assert gres_type("x", "rtx-6000-ada") == "rtx_6000_ada"


H100_LINE = (
    "NodeName=h100-node-01 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 "
    "RealMemory=2063903 Gres=gpu:h100:8"
)


def test_the_healthy_h100_tree_gives_the_node_line_and_explicit_gres(tmp_path: Path) -> None:
    tree = scenarios.build("h100-hgx-healthy", tmp_path / "t")
    s = node_shape(open_host(tree), "h100-node-01")
    r = render(s)
    assert r.problems == () and r.node_line == H100_LINE
    assert r.gres is not None
    lines = [x for x in r.gres.splitlines() if not x.startswith("#")]
    assert lines[0] == "AutoDetect=off"
    # GPUs 0-3 on socket 0 (CPUs 0-55,112-167 -> cores 0-55), 4-7 on socket 1
    assert lines[1] == "NodeName=h100-node-01 Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-55"
    assert lines[8] == "NodeName=h100-node-01 Name=gpu Type=h100 File=/dev/nvidia7 Cores=56-111"
    nvml = gres_conf(s, "nvml")
    assert "NodeName=h100-node-01 AutoDetect=nvml Name=gpu" in nvml and "File=" not in nvml
    lab = gres_conf(s, device="/lab/fakedev/nvidia{index}")
    assert "File=/lab/fakedev/nvidia3 " in lab


@pytest.mark.parametrize("name", scenarios.names())
def test_every_scenario_gives_a_line_or_names_what_is_missing(tmp_path: Path, name: str) -> None:
    tree = scenarios.build(name, tmp_path / "t")
    s = node_shape(open_host(tree), "n1")
    r = render(s)
    if r.node_line is None:
        assert r.problems and all(": " in p for p in r.problems)
        return
    assert r.node_line.startswith("NodeName=n1 CPUs=")
    assert ("Gres=gpu:" in r.node_line) == bool(s.gpus)


def test_missing_driver_with_gpus_in_pci_writes_no_line(tmp_path: Path) -> None:
    # The driver is absent but PCI shows the GPUs: a line without Gres would tell Slurm the
    # node has none.
    tree = scenarios.build("missing-driver", tmp_path / "t")
    r = render(node_shape(open_host(tree), "n1"))
    assert r.node_line is None
    assert any("Gres: the driver did not list the GPUs" in p for p in r.problems)


def test_cpu_only_vm_gets_a_line_without_gres(tmp_path: Path) -> None:
    tree = scenarios.build("vm-cpu-only", tmp_path / "t")
    s = node_shape(open_host(tree), "vm1")
    r = render(s)
    assert r.node_line is not None and "Gres" not in r.node_line, r.problems
    assert r.gres is not None and "no NVIDIA GPU" in r.gres


@pytest.mark.parametrize(
    ("kw", "missing"),
    [
        ({"sockets": None}, "Sockets: missing (x)"),
        ({"threads": 0}, "CPUs: not read"),
        ({"memory_bytes": None}, "RealMemory"),
        ({"cores": 7}, "do not divide"),  # 7 cores over 2 sockets: a cut or odd cpuinfo
    ],
)
def test_shape_refuses_to_guess(kw: dict[str, int | None], missing: str) -> None:
    base: dict[str, int | None] = {"sockets": 2, "cores": 8, "threads": 16, "memory_bytes": 1 << 34}
    s = shape("n1", **{**base, **kw}, unread={"sockets": "missing (x)"})  # type: ignore[arg-type]
    with pytest.raises(NotGenerated, match=re.escape(missing)):
        node_line(s)


def test_gpus_of_two_kinds_and_unknown_minors() -> None:
    gpus = [NodeGpu(0, "a100"), NodeGpu(1, "a100"), NodeGpu(2, "t4")]
    s = shape("n1", sockets=1, cores=4, threads=8, memory_bytes=8 << 30, gpus=gpus)
    assert node_line(s).endswith("RealMemory=8192 Gres=gpu:a100:2,gpu:t4:1")
    assert "Cores=" not in gres_conf(s)  # no affinity known: Slurm lets any core use them
    s2 = shape("n1", sockets=1, cores=4, threads=8, memory_bytes=8 << 30, gpus=[NodeGpu(None, "x")])
    with pytest.raises(NotGenerated, match="device minor"):
        gres_conf(s2)
    with pytest.raises(ValueError, match="choose"):
        gres_conf(s, "auto")


@pytest.mark.parametrize("bad", ["", "-x", "a b", "n1;rm", "x" * 70, "NodeName=evil"])
def test_node_names_are_checked(bad: str) -> None:
    with pytest.raises(ValueError, match="not a node name"):
        node_name(bad)


def test_node_name_is_the_short_hostname() -> None:
    assert node_name("gpu07.cluster.example") == "gpu07"


def test_this_machine_matches_slurmd_minus_c() -> None:
    """slurmd -C (slurmd's own reading of this machine) is the reference node line: every
    figure dolmen writes for the live host must be the one slurmd reports."""
    import shutil
    import socket
    import subprocess

    slurmd = shutil.which("slurmd") or (
        "/usr/sbin/slurmd" if Path("/usr/sbin/slurmd").exists() else None
    )
    if slurmd is None:
        pytest.skip("slurmd is not installed (apt-get install slurmd)")
    ref = subprocess.run([slurmd, "-C"], capture_output=True, text=True, timeout=30).stdout
    theirs = dict(w.split("=", 1) for w in ref.split() if "=" in w)
    name = socket.gethostname().split(".", 1)[0]
    line = node_line(node_shape(open_host(None), name))
    ours = dict(w.split("=", 1) for w in line.split())
    for key in ("NodeName", "CPUs", "CoresPerSocket", "ThreadsPerCore", "RealMemory"):
        assert ours[key] == theirs[key], (key, line, ref)
    boards = int(theirs.get("Boards", "1"))
    assert int(ours["Sockets"]) == boards * int(theirs["SocketsPerBoard"])


def test_a_gpu_whose_name_was_not_read_gets_no_guessed_type(tmp_path: Path) -> None:
    # GPU 3 of the XID 79 scenario fell off the bus: nvidia-smi lists it without a product
    # name. "Gres=gpu:h100:7,gpu:gpu:1" would declare a type nobody asks for.
    tree = scenarios.build("h100-xid79", tmp_path / "t")
    r = render(node_shape(open_host(tree), "n1"))
    assert r.node_line is None
    assert any("its product name was not read" in p for p in r.problems), r.problems
