"""Remedies filled with this host's values (issue 17): the runner fills every remedy's
fields once (checks/remedy.py); what is not known stays a placeholder, what is known never
does; drain advice speaks the scheduler the node shows, both where it shows none."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dolmen import demo
from dolmen.checks.model import Device
from dolmen.checks.remedy import Site, fill, site_of, values
from dolmen.host.tree import TreeHost
from tests.checks.helpers import by_subject, run_check
from tests.conftest import make_tree
from tests.hosts import scenarios

SLURM = 'scontrol update nodename=gpu-07 state=drain reason="gpu.xid on gpu:00000000:86:00.0"'
KUBE = "kubectl cordon gpu-07 && kubectl drain gpu-07 --ignore-daemonsets"


def test_the_drain_speaks_the_schedulers_the_node_shows() -> None:
    why = "gpu.xid on gpu:00000000:86:00.0"
    assert Site("gpu-07", slurm=True).drain(why) == SLURM
    assert Site("gpu-07", kubernetes=True).drain(why) == KUBE
    both = f"Slurm: {SLURM}; Kubernetes: {KUBE}"
    assert Site("gpu-07", slurm=True, kubernetes=True).drain(why) == both
    assert Site("gpu-07").drain(why) == both  # no scheduler shown is not "none"
    assert "nodename=<node> " in Site(None, slurm=True).drain(why)


@pytest.mark.parametrize(
    ("subject", "evidence", "template", "filled"),
    [
        (
            "gpu:00000000:86:00.0",
            {},
            "nvidia-smi -r -i <bus id>",
            "nvidia-smi -r -i 00000000:86:00.0",
        ),
        ("gpu:00000000:86:00.0", {}, "lspci -vvv -s <bdf>", "lspci -vvv -s 0000:86:00.0"),
        (
            "pci:0000:04:00.0",
            {},
            "lspci -s <bdf>; nvidia-smi -i <bus id>",
            "lspci -s 0000:04:00.0; nvidia-smi -i <bus id>",
        ),
        (
            "ib:mlx5_7/1",
            {},
            "ibportstate -C <device> -P <port> -D 0 <port> enable",
            "ibportstate -C mlx5_7 -P 1 -D 0 1 enable",
        ),
        ("ib:mlx5_7/1", {"netdev": "ib7"}, "ip link set <netdev> up", "ip link set ib7 up"),
        (
            "ib:mlx5_7/1",
            {"netdev": "ib7/ib8"},
            "ip link set <netdev> up",
            "ip link set <netdev> up",
        ),
        (
            "nic:eth0",
            {},
            "ethtool <nic>; ip link set <netdev> up",
            "ethtool eth0; ip link set eth0 up",
        ),
        ("mount:/data", {}, "mount <mount>", "mount /data"),
        ("lib:/usr/lib/libcuda.so.1", {}, "dpkg -S <path>", "dpkg -S /usr/lib/libcuda.so.1"),
        ("lib:libcudnn", {}, "dpkg -S <path>", "dpkg -S <path>"),
        ("mount:/my data", {}, "mount <mount>", "mount <mount>"),  # would split in a shell
        (
            "host",
            {},
            "nvidia-smi -r -i <bus id>; dpkg -S <path>",
            "nvidia-smi -r -i <bus id>; dpkg -S <path>",
        ),
        # bundle data is untrusted: a value that is no plain name never reaches a command
        (
            "ib:mlx5_0/1",
            {"netdev": "ib0;reboot"},
            "ip link set <netdev> up",
            "ip link set <netdev> up",
        ),
        ("nic:$(reboot)", {}, "ethtool <nic>", "ethtool <nic>"),
    ],
)
def test_fields_come_from_the_subject_and_the_evidence(
    subject: str, evidence: dict[str, str], template: str, filled: str
) -> None:
    assert fill(template, values("c.id", subject, evidence, None, None)) == filled


def test_a_gpu_without_bus_id_is_named_by_its_uuid() -> None:
    known = values("c.id", "gpu:GPU-1234", {}, Device(uuid="GPU-1234"), None)
    assert fill("nvidia-smi -i <bus id>", known) == "nvidia-smi -i GPU-1234"


def test_the_drain_reason_cannot_break_out_of_its_quotes() -> None:
    site = Site("gpu-07", slurm=True)
    known = values('c.id"; reboot; "', 'nic:a"b', {}, None, site)
    assert known["drain"].count('"') == 2 and ";" not in known["drain"].split("reason=")[1]


def _tree(root: Path, files: dict[str, str], env: dict[str, str] | None = None) -> TreeHost:
    meta = {"format": "dolmen.snapshot/1", "hostname": "gpu-07.cluster.example"}
    if env:
        meta["environment"] = env  # type: ignore[assignment]
    make_tree(root, {**files, "dolmen-snapshot.json": json.dumps(meta)})
    return TreeHost(root)


@pytest.mark.parametrize(
    ("files", "env", "site"),
    [
        ({"etc/slurm/slurm.conf": "ClusterName=c\n"}, None, Site("gpu-07", slurm=True)),
        ({"var/spool/slurmd/.keep": ""}, None, Site("gpu-07", slurm=True)),
        (
            {"var/lib/kubelet/config.yaml": "kind: KubeletConfiguration\n"},
            None,
            Site("gpu-07.cluster.example", kubernetes=True),
        ),
        (
            {},
            {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "NODE_NAME": "node-a"},
            Site("node-a", kubernetes=True),
        ),
        ({"etc/slurm/slurm.conf": ""}, {"SLURMD_NODENAME": "gpu007"}, Site("gpu007", slurm=True)),
        ({}, None, Site("gpu-07.cluster.example")),  # neither shown: the full name, both commands
    ],
)
def test_site_of_a_tree(
    tmp_path: Path, files: dict[str, str], env: dict[str, str] | None, site: Site
) -> None:
    host = _tree(tmp_path, files, env)
    assert site_of(host, "gpu-07.cluster.example") == site


def test_a_hostile_node_name_is_not_used(tmp_path: Path) -> None:
    host = _tree(tmp_path, {"etc/slurm/slurm.conf": ""}, {"SLURMD_NODENAME": "a;reboot"})
    assert site_of(host, None) == Site(None, slurm=True)


def test_xid79_on_a_slurm_node_says_scontrol_for_this_node(tmp_path: Path) -> None:
    tree = demo.build_sample("hgx-h100-xid79", tmp_path / "t")
    make_tree(tree, {"etc/slurm/slurm.conf": "ClusterName=c\n"})
    f = by_subject(run_check(tree, "gpu.xid"))["gpu:00000000:86:00.0"]
    assert f.remedy is not None and f.status.value == "fail"
    assert (
        'scontrol update nodename=h100-node-01 state=drain reason="gpu.xid on '
        'gpu:00000000:86:00.0"' in f.remedy
    )
    assert "kubectl" not in f.remedy and "<" not in f.remedy
    assert f.device is not None and f.device.index == 3


# Fields a finding always knows: from its subject, and the node (every scenario has a name).
def _derivable(subject: str) -> set[str]:
    out = {"node", "drain"}
    if re.fullmatch(r"gpu:[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]", subject):
        out |= {"bus id", "bdf"}
    if subject.startswith("pci:"):
        out.add("bdf")
    if subject.startswith("ib:"):
        out |= {"device", "port"}
    if subject.startswith("mount:"):
        out.add("mount")
    if subject.startswith("lib:/"):
        out.add("path")
    return out


@pytest.mark.parametrize("name", scenarios.names())
def test_no_placeholder_left_where_the_value_is_known(name: str) -> None:
    golden = json.loads((scenarios.HOSTS / name / "expected.json").read_text())
    left = [
        (f["check"], f["subject"], field)
        for f in golden["findings"]
        if f["remedy"]
        for field in _derivable(f["subject"])
        if f"<{field}>" in f["remedy"]
    ]
    assert not left
