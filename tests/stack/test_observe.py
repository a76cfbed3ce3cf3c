"""``observe``: the stack of host trees (scenarios on real recordings) and of real
recordings alone; never "absent", always a version or a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.stack.lockfile import dumps, loads
from dolmen.stack.model import KINDS
from dolmen.stack.observe import observe
from tests.conftest import make_tree, recording
from tests.hosts.scenarios import build
from tests.report.contract import assert_valid
from tests.stack.nodes import node


def test_hgx_node_every_component_with_its_sources(tmp_path: Path) -> None:
    lock = observe(TreeHost(node(tmp_path / "n")))
    c = lock.by_id()
    assert c["driver"].version == "580.105.08" and c["driver"].details == {
        "branch": "580",
        "flavour": "open",
    }
    assert [p.name for p in c["driver"].packages] == ["nvidia-driver-580-open"]
    assert c["module"].details["signer"] == "h100-node-01 Secure Boot Module Signature key"
    assert (
        c["module"].files[0].path.endswith("dkms/nvidia.ko")
        and len(c["module"].files[0].sha256) == 64
    )
    assert c["kernel"].packages[0].name == "linux-image-5.15.0-126-generic"
    assert c["nccl"].version == "2.27.7" and c["nccl"].packages[0].version == "2.27.7-1+cuda13.0"
    assert c["fabric-manager"].version == "580.105.08"
    assert c["dcgm"].version == "4.2.3" and c["container-toolkit"].version == "1.17.8"
    toolkit = c["cuda:/usr/local/cuda-13.0"]
    assert toolkit.version == "13.0.2" and toolkit.packages[0].name == "cuda-toolkit-13-0"
    # The real nvidia-smi XML of an 8x H100 node and its real /sys/class/infiniband tree.
    vbios = [x for x in lock.components if x.kind == "vbios"]
    assert (
        len(vbios) == 8 and all(v.version for v in vbios) and lock.gpu_architectures == ("Hopper",)
    )
    nics = {x.id: x for x in lock.components if x.kind == "nic-firmware"}
    assert "nic-firmware:mlx5_0" in nics and nics["nic-firmware:mlx5_0"].version
    assert nics["nic-firmware:mlx5_0"].source == "sys/class/infiniband/mlx5_0/fw_ver"
    assert lock.package_manager == "apt" and not lock.notes
    assert {x.kind for x in lock.components} == set(KINDS)


@pytest.mark.parametrize("scenario", ["vm-cpu-only", "missing-driver", "h100-hgx-healthy"])
def test_what_a_host_does_not_show_is_unknown_with_a_reason(tmp_path: Path, scenario: str) -> None:
    lock = observe(TreeHost(build(scenario, tmp_path / scenario)))
    for comp in lock.components:
        assert comp.known or comp.reason, comp
        assert comp.known != bool(comp.reason), comp
    doc = assert_valid(lock.to_json())
    assert all(v["state"] in ("known", "unknown") for v in doc["components"].values())
    assert loads(dumps(lock)) == lock


def test_a_bundle_without_the_package_database_never_says_missing(tmp_path: Path) -> None:
    lock = observe(TreeHost(build("h100-hgx-healthy", tmp_path / "h")))
    fm = lock.by_id()["fabric-manager"]
    assert not fm.known and not fm.vouched_missing and fm.reason.startswith("not in this bundle")
    assert lock.notes and "no package database" in lock.notes[0]


def test_driver_from_its_package_when_not_loaded(tmp_path: Path) -> None:
    tree = node(tmp_path / "n", scenario="missing-driver")
    driver = observe(TreeHost(tree)).by_id()["driver"]
    assert driver.version == "580.105.08" and driver.source.endswith("nvidia-driver-580-open")


def test_real_ibstat_alone_gives_the_nic_firmware(tmp_path: Path) -> None:
    text = recording("infiniband/gpud__ibstat.47.0.a100.all.active.0").read_text()
    lock = observe(TreeHost(make_tree(tmp_path / "t", commands={"ibstat": text})))
    fw = {c.id: c.version for c in lock.components if c.kind == "nic-firmware"}
    assert set(fw.values()) == {"22.35.2302", "28.37.1014"}


def test_real_fabric_manager_log_gives_its_version(tmp_path: Path) -> None:
    text = recording("fabric-manager/gpud__fabric-manager.0.log").read_text(errors="replace")
    lock = observe(TreeHost(make_tree(tmp_path / "t", files={"var/log/fabricmanager.log": text})))
    fm = lock.by_id()["fabric-manager"]
    assert fm.version == "535.161.08" and fm.source == "var/log/fabricmanager.log"
