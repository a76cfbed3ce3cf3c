"""``dolmen topo`` and ``dolmen nccl``, in process, on the rails scenario, the real lspci
recording and hostile trees: outputs against their schemas, pictures, atomic writes
that refuse special files, and `nccl env --write` through the journaled engine with its
audit events, then rolled back."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from dolmen.cli.main import main
from dolmen.demo import build_sample
from tests.conftest import make_tree, recording
from tests.hosts import scenarios
from tests.nccl.ncclxml import load
from tests.report.contract import assert_valid


@pytest.fixture(scope="module")
def rails(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-hgx-rails", tmp_path_factory.mktemp("rails") / "tree")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_topo_text_json_and_pictures(
    rails: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = run(capsys, "topo", "--from", str(rails))
    assert rc == 0 and "GPU0   X    NV18" in out and "NIC0: mlx5_0" in out
    assert "GPU3: NIC3 (mlx5_5) [PIX]" in out and "152 of 152 cells" in out
    rc, out, _ = run(capsys, "topo", "--from", str(rails), "--json")
    doc = assert_valid(json.loads(out))
    assert doc["closest_nic"]["GPU7"] == ["NIC7"] and doc["matrix"]["GPU0"]["NIC0"] == "PIX"
    assert doc["nvidia_smi"] == {"compared": 152, "agreed": 152, "disagreements": []}
    svg = tmp_path / "t.svg"
    rc, out, _ = run(capsys, "topo", "--from", str(rails), "--svg", str(svg))
    root = ElementTree.fromstring(svg.read_text())
    assert rc == 0 and root.tag.endswith("svg") and "NVLink NV18" in svg.read_text()
    png = tmp_path / "t.png"
    rc, _, _ = run(capsys, "topo", "--from", str(rails), "--png", str(png))
    assert rc == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_topo_refusals_name_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(capsys, "topo", "--from", str(make_tree(tmp_path / "e")))
    assert rc == 2 and err.startswith("dolmen: error: no PCI tree:")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rc, _, err = run(capsys, "topo", "--from", str(tmp_path / "e"), "--svg", str(fifo))
    assert rc == 2 and fifo.is_fifo() and "fifo" in err.lower()
    rc, _, err = run(capsys, "topo", "--svg", "a", "--png", "b")
    assert rc == 2 and "not both" in err


def test_topo_of_a_tree_that_did_not_record_the_bus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A demo tree without sys/bus/pci (its sys/ holds the rest): the bus is not in this
    bundle, never "missing" (a claim that the host has no PCI bus)."""
    tree = build_sample("hgx-h100", tmp_path / "t")
    shutil.rmtree(tree / "sys/bus/pci")
    rc, _, err = run(capsys, "topo", "--from", str(tree))
    assert rc == 2
    assert err.splitlines()[0] == "dolmen: error: no PCI tree: not in this bundle: sys/bus/pci"
    (tree / "sys/bus/pci").mkdir()  # the bus recorded, with no device on it: that is evidence
    rc, _, err = run(capsys, "topo", "--from", str(tree))
    assert rc == 2 and err.startswith("dolmen: error: no PCI tree: missing")


def test_nccl_topo_writes_the_file_or_one_line(
    rails: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "topo.xml"
    rc, out, _ = run(capsys, "nccl", "topo", "--from", str(rails), "-o", str(out_file))
    assert rc == 0 and out.startswith(f"wrote {out_file}: 8 GPUs, 9 NICs (sysfs)")
    assert len([n for n in load(out_file.read_text()).subs]) == 2
    rc, out, _ = run(
        capsys,
        "nccl",
        "topo",
        "--from",
        str(recording("lspci/gpud__lspci-vvv")),
        "-o",
        str(tmp_path / "lspci.xml"),
    )
    assert rc == 0 and "8 GPUs, 12 NICs (lspci -vvv)" in out
    for tree, why in (
        (make_tree(tmp_path / "empty"), "no PCI tree"),
        (
            make_tree(
                tmp_path / "flat",
                files={
                    "sys/bus/pci/devices/0000:19:00.0/vendor": "0x10de\n",
                    "sys/bus/pci/devices/0000:19:00.0/class": "0x030200\n",
                },
            ),
            "GPU0 without a PCI location",
        ),
    ):
        rc, _, err = run(capsys, "nccl", "topo", "--from", str(tree), "-o", str(tmp_path / "x"))
        assert rc == 2 and why in err.splitlines()[0], err
        assert not (tmp_path / "x").exists()


def test_nccl_env_json_and_export(rails: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "nccl", "env", "--from", str(rails), "--json")
    doc = assert_valid(json.loads(out))
    assert doc["nccl_conf"] is None and len(doc["variables"]) == 6
    rc, out, _ = run(capsys, "nccl", "env", "--from", str(rails), "--export")
    assert rc == 0 and "export NCCL_SOCKET_IFNAME==eth0" in out.splitlines()


def _events(state: Path) -> list[tuple[str, str]]:
    log = state / "audit" / "audit.log"
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    return [(e["event"]["action"], e["event"]["outcome"]) for e in lines]


def test_write_plans_applies_journals_audits_and_rolls_back(
    rails: Path, tmp_path: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "t"
    shutil.copytree(rails, tree, symlinks=True)
    site = "# the site's own\nNCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5\n"
    (tree / "etc/nccl.conf").write_text(site)
    rc, out, _ = run(capsys, "nccl", "env", "--write", "--root", str(tree))
    assert rc == 0 and "+NCCL_IB_HCA==mlx5_0:1" in out and "-NCCL_IB_HCA=mlx5" in out
    assert "dry run" in out and (tree / "etc/nccl.conf").read_text() == site
    assert not (tree / "etc/nccl-topo.xml").exists()
    rc, out, _ = run(capsys, "nccl", "env", "--write", "--root", str(tree), "--json")
    plan: dict[str, Any] = assert_valid(json.loads(out))
    assert plan["counts"]["change"] == 2
    rc, out, _ = run(capsys, "nccl", "env", "--write", "--yes", "--root", str(tree))
    assert rc == 0, out
    conf = (tree / "etc/nccl.conf").read_text()
    assert "NCCL_TOPO_FILE=/etc/nccl-topo.xml" in conf and "NCCL_DEBUG=WARN" in conf
    load((tree / "etc/nccl-topo.xml").read_text())
    assert _events(dolmen_dirs)[-2:] == [("nccl.apply", "unknown"), ("nccl.apply", "success")]
    rc, out, _ = run(capsys, "nccl", "env", "--write", "--yes", "--root", str(tree))
    assert rc == 0 and "nothing to change" in out  # written again: the same files
    with open(tree / "etc/nccl.conf", "a") as f:
        f.write("NCCL_IB_HCA=mlx5_9\n")  # someone edits it after the write
    rc, out, err = run(capsys, "nccl", "env", "--write", "--yes", "--root", str(tree))
    assert rc == 3 and "active" in err  # an active write rolls back first
    rc, out, _ = run(capsys, "nccl", "rollback", "--yes", "--root", str(tree))
    assert rc == 0 and (tree / "etc/nccl.conf").read_text() == site
    assert not (tree / "etc/nccl-topo.xml").exists()
    assert _events(dolmen_dirs)[-1] == ("nccl.rollback", "success")
    rc, out, _ = run(capsys, "nccl", "rollback", "--yes", "--root", str(tree))
    assert rc == 0 and out.startswith("nothing to roll back")


@pytest.mark.parametrize("rel", ["etc/nccl.conf", "etc/nccl-topo.xml"])
@pytest.mark.parametrize("kind", ["FIFO", "folder"])
def test_write_refuses_a_fifo_or_folder_in_one_line(
    rel: str,
    kind: str,
    rails: Path,
    tmp_path: Path,
    dolmen_dirs: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A FIFO or folder where a file goes: refused before the plan, nothing written."""
    tree = tmp_path / "t"
    shutil.copytree(rails, tree, symlinks=True)
    (os.mkfifo if kind == "FIFO" else os.mkdir)(tree / rel)
    for yes in ([], ["--yes"]):
        rc, out, err = run(capsys, "nccl", "env", "--write", "--root", str(tree), *yes)
        assert rc == 3 and out == ""
        assert err.splitlines()[0] == (
            f"dolmen: error: /{rel}: not a regular file ({kind}); nothing was written"
        )
    assert sorted(p.name for p in (tree / "etc").glob("nccl*")) == [rel.split("/")[1]]
    assert not (dolmen_dirs / "audit").exists()


def test_write_stays_inside_a_tree_whose_etc_links_out(
    rails: Path, tmp_path: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hostile tree's etc -> /elsewhere/etc (as a link to this machine's /etc would be):
    the link is the tree's own /etc, resolved inside the tree, as tune --root resolves it;
    the folder outside is never written (--root opened the tree as this machine's /)."""
    tree = tmp_path / "t"
    shutil.copytree(rails, tree, symlinks=True)
    outside = tmp_path / "elsewhere" / "etc"
    shutil.move(str(tree / "etc"), outside)
    (tree / "etc").symlink_to(outside)
    before = sorted(p.name for p in outside.iterdir())
    tree_before = sorted(tree.rglob("*"))
    rc, out, _ = run(capsys, "nccl", "env", "--write", "--yes", "--root", str(tree))
    assert rc == 0, out
    assert sorted(p.name for p in outside.iterdir()) == before
    inside = tree / str(outside).lstrip("/")
    assert (inside / "nccl.conf").is_file() and (inside / "nccl-topo.xml").is_file()
    # The rollback removes both files and every folder the apply made behind the link,
    # found where the apply made them (it said "not back", exit 3, looking at the link).
    rc, out, err = run(capsys, "nccl", "rollback", "--yes", "--root", str(tree))
    assert rc == 0 and "not back" not in out, (out, err)
    assert sorted(tree.rglob("*")) == tree_before  # no folder of the apply's left behind
    assert (tree / "etc").is_symlink() and sorted(p.name for p in outside.iterdir()) == before


def test_write_refuses_from_and_stray_flags(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "nccl", "env", "--write", "--from", "x")
    assert rc == 2 and "--root" in err
    rc, _, err = run(capsys, "nccl", "env", "--yes")
    assert rc == 2


def test_a_root_that_is_not_a_folder_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plain = tmp_path / "file"
    plain.write_text("not a folder\n")
    for argv in (("env", "--write"), ("rollback", "--yes")):
        rc, out, err = run(capsys, "nccl", *argv, "--root", str(plain))
        assert rc == 2 and f"--root {plain}: not a folder" in err and "host tree" in err, err
        assert out == "" and plain.read_text() == "not a folder\n"
