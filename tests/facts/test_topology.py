"""Topology facts: every real ``nvidia-smi topo -m`` (issue excerpts, capture sections), the
NIC Legend, and cut, ragged, junk and hostile inputs (never an exception, None with a reason)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dolmen.facts import to_jsonable
from dolmen.facts import topology as topo
from dolmen.facts.topology import Path as TopoPath
from dolmen.facts.topology import PathKind
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording, recordings_in

EXCERPTS = "nvidia-smi-topo/issues__topo-m-excerpts.md"
CAPTURES = "nvidia-smi-captures"


def excerpts() -> dict[str, str]:
    """The fenced blocks of the excerpt file, keyed by the issue URL above each one."""
    text = recording(EXCERPTS).read_text()
    found = re.findall(r"^## (https://\S+).*?```\n(.*?)```", text, re.S | re.M)
    assert len(found) == 3
    return dict(found)


def capture_section(path: Path) -> str:
    """The ``topo -m`` section of a multi-command capture: after its ``# $`` line and the
    banner under it, up to the next banner."""
    text = path.read_text()
    _, _, after = text.partition("# $ nvidia-smi topo -m\n")
    assert after, f"{path.name} has no topo -m section"
    body = after.split("\n", 1)[1]  # the banner line under the command
    return body.split("\n####", 1)[0]


@pytest.mark.parametrize(
    ("cell", "path"),
    [
        (" X ", TopoPath(PathKind.X)),
        ("NV18", TopoPath(PathKind.NV, 18)),
        ("NV1", TopoPath(PathKind.NV, 1)),
        ("NV12", TopoPath(PathKind.NV, 12)),
        ("PIX", TopoPath(PathKind.PIX)),
        ("PXB", TopoPath(PathKind.PXB)),
        ("PHB", TopoPath(PathKind.PHB)),
        ("NODE", TopoPath(PathKind.NODE)),
        ("SYS", TopoPath(PathKind.SYS)),
        ("SOC", TopoPath(PathKind.SYS)),  # drivers before the SYS/NODE split
        ("NV0", None),
        ("NV", None),
        ("NV1234", None),
        ("NODENODE", None),
        ("nv18", None),
        ("N", None),
        ("", None),
        ("\x00SYS", None),
    ],
)
def test_parse_path(cell: str, path: TopoPath | None) -> None:
    assert topo.parse_path(cell) == path


def test_kinds_are_ordered_by_closeness() -> None:
    kinds = [PathKind.X, PathKind.NV, PathKind.PIX, PathKind.PXB]
    kinds += [PathKind.PHB, PathKind.NODE, PathKind.SYS]
    assert sorted(reversed(kinds)) == kinds
    assert PathKind.PIX < PathKind.NODE and not PathKind.SYS < PathKind.PHB
    assert str(TopoPath(PathKind.NV, 18)) == "NV18" and str(TopoPath(PathKind.PXB)) == "PXB"


def test_nccl_1453_h100_nine_nics() -> None:
    """8x H100 NV18, NIC0..NIC8, cut after the NIC5 row: GPU rows whole."""
    m, unread = topo.parse_topo(excerpts()["https://github.com/NVIDIA/nccl/issues/1453"])
    assert m is not None
    assert m.gpus == tuple(f"GPU{i}" for i in range(8))
    assert m.nics == tuple(f"NIC{i}" for i in range(9))
    assert all(str(m.path(a, b)) == "NV18" for a in m.gpus for b in m.gpus if a != b)
    assert str(m.path("GPU0", "NIC8")) == "PIX" and str(m.path("GPU7", "NIC1")) == "PIX"
    assert str(m.path("NIC0", "GPU3")) == "SYS" and str(m.path("GPU4", "NIC0")) == "SYS"
    assert m.path("NIC6", "NIC7") is None  # neither row was printed
    assert str(m.affinity["GPU0"].cpus) == "0-79" and m.affinity["GPU0"].numa_node == 0
    assert str(m.affinity["GPU7"].cpus) == "80-159" and m.affinity["GPU7"].numa_node == 1
    assert m.affinity["GPU3"].gpu_numa_id is None
    assert unread["GPU3.gpu_numa_id"] == "not supported (N/A)"
    assert "no row for NIC6, NIC7, NIC8 (the output ends early)" in m.problems
    assert any("'NIC'" in p for p in m.problems)  # the cut "NIC" line


def test_ibm_h100_spaces_and_a_cut_gpu7_row() -> None:
    """Tabs pasted as spaces, a command line above the header, the GPU7 row cut in a cell."""
    m, unread = topo.parse_topo(
        excerpts()["https://github.com/IBM/pytorch-communication-benchmarks/issues/1"]
    )
    assert m is not None and len(m.devices) == 14
    assert str(m.path("GPU1", "NIC0")) == "PIX" and str(m.path("GPU0", "NIC0")) == "NODE"
    assert str(m.affinity["GPU0"].cpus) == "0-47,96-143"
    assert str(m.affinity["GPU6"].cpus) == "48-95,144-191" and m.affinity["GPU6"].numa_node == 1
    # GPU7's own row stops at "N": the three cells before it are read, its affinity is not.
    assert set(m.paths["GPU7"]) == {"GPU0", "GPU1", "GPU2"}
    assert "GPU7" not in m.affinity and unread["GPU7.cpus"].startswith("malformed")
    assert str(m.path("GPU7", "GPU5")) == "NV18"  # from GPU5's row
    assert m.path("GPU7", "NIC0") is None


def test_nccl_820_a100_mlx5_columns_glued_cells_and_cut() -> None:
    """Old header naming mlx5_0..9, "NODENODE" glued by the paste, cut in the GPU6 row."""
    m, unread = topo.parse_topo(excerpts()["https://github.com/NVIDIA/nccl/issues/820"])
    assert m is not None
    assert m.nics == tuple(f"mlx5_{i}" for i in range(10)) and m.nic_name("mlx5_3") == "mlx5_3"
    assert str(m.path("GPU0", "GPU7")) == "NV12"
    # The row is read up to the glued cell and no further: nothing after it is guessed.
    assert str(m.path("GPU0", "mlx5_3")) == "NODE" and m.path("GPU0", "mlx5_4") is None
    assert "GPU0: 'NODENODE' under mlx5_4 is not its path; the rest of the row is not read" in (
        m.problems
    )
    assert str(m.path("GPU4", "mlx5_6")) == "PXB" and str(m.affinity["GPU4"].cpus) == "32-63,96-127"
    assert unread["GPU4.gpu_numa_id"] == "not supported (no such column from this driver)"
    # GPU6 is cut after six cells: the last one may be cut, so five are kept.
    assert set(m.paths["GPU6"]) == {"GPU0", "GPU1", "GPU2", "GPU3", "GPU4"}
    assert unread["GPU7.cpus"] == "cut off (no GPU7 row: the output ends early)"


@pytest.mark.parametrize("path", recordings_in(CAPTURES, "*.txt"), ids=lambda p: p.name)
def test_capture_sections(path: Path) -> None:
    """Every capture's topo -m: one GPU with an underlined (ANSI) header, or an error."""
    m, unread = topo.parse_topo(capture_section(path))
    if "windows" in path.name and "591.86" in path.name:  # "-m is missing its value", exit 255
        assert m is None and unread["matrix"].startswith("malformed: no matrix")
        return
    assert m is not None and m.devices == ("GPU0",) and not m.problems
    assert m.paths == {"GPU0": {}}
    assert unread["GPU0.gpu_numa_id"] == "not supported (N/A)"
    if "windows" in path.name:  # WDDM prints no affinity: empty cells
        assert m.affinity["GPU0"].cpus is None
        assert unread["GPU0.cpus"] == "missing (an empty cell)"
        return
    expected = re.search(r"^GPU0\t X \t(\S+)\t", capture_section(path), re.M)
    assert expected and str(m.affinity["GPU0"].cpus) == expected.group(1)
    assert m.affinity["GPU0"].numa_node == 0


NIC_LEGEND = (
    "\t\x1b[4mGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV4\tPIX\tSYS\t0-15\t0\t\tN/A\n"
    "GPU1\tNV4\t X \tSYS\tPXB\t16-31\t1\t\tN/A\n"
    "NIC0\tPIX\tSYS\t X \tSYS\t\t\t\t\n"
    "NIC1\tSYS\tPXB\tSYS\t X \t\t\t\t\n"
    "\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_bond_0\n"
)


def test_nic_legend_and_a_whole_matrix() -> None:
    m, unread = topo.parse_topo(NIC_LEGEND)
    assert m is not None and not m.problems
    assert m.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_bond_0"}
    assert m.nic_name("NIC1") == "mlx5_bond_0"
    assert str(m.path("NIC1", "GPU1")) == "PXB" and str(m.path("GPU0", "GPU1")) == "NV4"
    assert str(m.affinity["GPU1"].cpus) == "16-31" and m.affinity["GPU1"].numa_node == 1
    assert set(m.affinity) == {"GPU0", "GPU1"}  # NIC rows carry no affinity
    assert set(unread) == {"GPU0.gpu_numa_id", "GPU1.gpu_numa_id"}


def test_grace_hopper_gpu_numa_id() -> None:
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-71\t0\t\t1\n"
    m, unread = topo.parse_topo(text)
    assert m is not None and m.affinity["GPU0"].gpu_numa_id == 1 and not unread


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "malformed: no matrix"),
        ("No devices were found\n", "malformed: no matrix"),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "malf"),
        ("\x00\x01\x02" * 1000, "malformed: no matrix"),
        ("GPU0 X\n", "malformed: no matrix"),  # a row without its header
        ("\tGPU0\tGPU0\nGPU0\t X \n", "malformed: a device named twice"),
        ("\tGPU0\tNI\x07C0\n", "malformed: 'NI\\x07C0' in the header"),
        ("\tGPU0\t" + "x" * 70_000 + "\n", "malformed: a header line of"),
        ("\t" + "\t".join(f"GPU{i}" for i in range(600)) + "\n", "malformed: 600 device columns"),
    ],
)
def test_no_matrix_is_none_with_a_reason(text: str, reason: str) -> None:
    m, unread = topo.parse_topo(text)
    assert m is None and unread["matrix"].startswith(reason)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        # A row longer than the header: its extra cells are affinity cells that do not fit.
        ("\tGPU0\tGPU1\nGPU0\t X \tNV2\tSYS\nGPU1\tNV2\t X \n", None),
        # X off the diagonal: the row is misaligned from there.
        ("\tGPU0\tGPU1\nGPU0\tNV2\t X \nGPU1\tNV2\t X \n", "GPU0: 'NV2' under GPU0 is not"),
        # A second GPU0 row, and a row for a device the header does not name.
        ("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU0\t X \tSYS\nGPU9\tSYS\tSYS\n", "GPU0: a second row"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU9\tSYS\tSYS\n", "a row 'GPU9' that is not a column"),
        # The text ends inside the last row (no newline): its last cell is not trusted.
        ("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV2\t X ", "'GPU1': the output ends inside"),
        ("\tGPU0\tGPU1\tCPU Affinity\tJunk Column\nGPU0\t X \tNV2\t0-3\t?\n", "affinity columns"),
    ],
)
def test_ragged_rows_are_problems_not_guesses(text: str, problem: str | None) -> None:
    m, _ = topo.parse_topo(text)
    assert m is not None
    if problem is None:
        assert str(m.path("GPU0", "GPU1")) == "NV2"
    else:
        assert any(p.startswith(problem) for p in m.problems), m.problems


def test_cut_inside_the_last_cell_keeps_no_false_nvlink_count() -> None:
    """``NV18`` cut to ``NV1`` by the end of the text must not read as one link."""
    m, _ = topo.parse_topo("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV18\tNV1")
    assert m is not None and str(m.path("GPU0", "GPU1")) == "NV18"
    assert m.path("GPU0", "GPU2") is None


def test_affinity_cells_that_do_not_parse() -> None:
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tSYS\t0-3,N\t-1\n"
        "GPU1\tSYS\t X \t0-99999999\tN/A\n"
        "GPU2\tSYS\n"
    )
    m, unread = topo.parse_topo(text)
    assert m is not None
    assert unread["GPU0.cpus"].startswith("malformed") and unread["GPU0.numa_node"] == (
        "malformed: '-1'"
    )
    assert unread["GPU1.cpus"].startswith("malformed") and unread["GPU1.numa_node"].startswith(
        "not supported"
    )


def test_hostile_sizes_are_bounded() -> None:
    header = "\tGPU0\tGPU1\n"
    huge = header + "GPU0\t X \tNV2\n" + "GPU1\tNV2\t X \n" * 200_000 + "x" * (5 << 20)
    m, _ = topo.parse_topo(huge)
    assert m is not None and str(m.path("GPU1", "GPU0")) == "NV2"
    assert any("second row" in p or "more rows" in p for p in m.problems)
    long_row = header + "GPU0\t X \t" + "NV2" * 100_000 + "\n"
    m, _ = topo.parse_topo(long_row)
    assert m is not None and any("characters, not read" in p for p in m.problems)
    m, _ = topo.parse_topo("\x1b[4m\x1b]0;title\x07" + header + "GPU0\t\x1b[31mX\x1b[0m\n")
    assert m is not None  # SGR escapes are dropped; the cell reads as X


def test_collect_from_a_tree(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ok", commands={"nvidia-smi topo -m": NIC_LEGEND})
    facts = topo.collect(TreeHost(root))
    assert facts.matrix is not None and facts.matrix.nic_name("NIC0") == "mlx5_0"
    doc = to_jsonable(facts)
    assert doc["matrix"]["paths"]["GPU0"]["NIC0"] == {"kind": "PIX", "links": 0}
    assert doc["matrix"]["affinity"]["GPU0"]["cpus"] == {"cpus": list(range(16))}


def test_collect_says_why_there_is_no_matrix(tmp_path: Path) -> None:
    # A tree with no commands/ at all did not record the matrix; one with commands/ says
    # the command was not there.
    absent = topo.collect(TreeHost(make_tree(tmp_path / "absent")))
    assert absent.matrix is None
    assert absent.unread["matrix"] == "not in this bundle: nvidia-smi topo -m"
    (tmp_path / "recorded" / "commands").mkdir(parents=True)
    recorded = topo.collect(TreeHost(tmp_path / "recorded"))
    assert recorded.unread["matrix"].startswith("missing")
    failed = make_tree(
        tmp_path / "failed",
        commands={"nvidia-smi topo -m": ("ERROR: Option -m is missing its value.\n", 255)},
    )
    facts = topo.collect(TreeHost(failed))
    assert facts.matrix is None
    assert facts.unread["matrix"].startswith("command failed: nvidia-smi topo -m: exit 255")
    junk = make_tree(tmp_path / "junk", commands={"nvidia-smi topo -m": "\x00\xff junk"})
    assert topo.collect(TreeHost(junk)).unread["matrix"].startswith("malformed")


def test_every_cut_and_mutation_of_the_real_matrices_parses_without_raising() -> None:
    """Each excerpt cut at every 7th character, and with random bytes changed: no exception,
    and no NV# count that the whole text does not have."""
    import random

    rng = random.Random(8)
    for text in [*excerpts().values(), NIC_LEGEND]:
        counts = set(re.findall(r"NV\d+", text))
        for end in range(0, len(text), 7):
            m, unread = topo.parse_topo(text[:end])
            assert (m is None) == ("matrix" in unread)
            if m is not None:
                seen = {str(p) for row in m.paths.values() for p in row.values()}
                assert {s for s in seen if s.startswith("NV")} <= counts
        for _ in range(200):
            chars = list(text)
            for _ in range(5):
                chars[rng.randrange(len(chars))] = chr(rng.choice([0, 7, 9, 10, 27, 65, 0x2028]))
            topo.parse_topo("".join(chars))
