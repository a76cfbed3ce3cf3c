"""The NCCL environment: each variable on the rails scenario, RoCE GID indices (one,
differing, unread), the socket interface, GPUDirect's level, nccl.conf merging, and the
one launch function."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dolmen.facts.network import Interface
from dolmen.host.tree import TreeHost
from dolmen.nccl.__main__ import shell_lines
from dolmen.nccl.conf import BEGIN, END, merged, parse_conf
from dolmen.nccl.env import _socket_ifname, virtual_name
from dolmen.nccl.site import compute, launch_env
from tests.hosts import scenarios

V4 = "0000:0000:0000:0000:0000:ffff:0a00:00{:02x}"


@pytest.fixture(scope="module")
def rails(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scenarios.build("h100-hgx-rails", tmp_path_factory.mktemp("rails") / "tree")


def test_rails_environment(rails: Path) -> None:
    _, env = compute(TreeHost(rails))
    values = env.values()
    assert values == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1",
        "NCCL_SOCKET_IFNAME": "=eth0",
        "NCCL_NET_GDR_LEVEL": "PXB",
    }
    why = {v.name: v.why for v in env.variables}
    assert "GPU0 mlx5_0 (PIX)" in why["NCCL_IB_HCA"]
    assert why["NCCL_IB_GID_INDEX"].startswith("InfiniBand")
    assert "default route" in why["NCCL_SOCKET_IFNAME"]
    assert [v.name for v in env.variables][-2:] == ["NCCL_CROSS_NIC", "NCCL_TOPO_FILE"]


def _roce(rails: Path, tmp: Path, index_of: dict[str, int | None]) -> Path:
    """The rails tree with its HCAs on Ethernet (RoCE), each with a GID table whose RoCE
    v2 IPv4 entry sits at ``index_of[hca]`` (None: no IPv4 address)."""
    tree = tmp / "roce"
    shutil.copytree(rails, tree, symlinks=True)
    for n, (hca, at) in enumerate(index_of.items()):
        port = tree / f"sys/class/infiniband/{hca}/ports/1"
        (port / "link_layer").write_text("Ethernet\n")
        for sub in ("gids", "gid_attrs/types"):
            (port / sub).mkdir(parents=True, exist_ok=True)
        (port / "gids/0").write_text("fe80:0000:0000:0000:0000:0000:0000:0001\n")
        (port / "gid_attrs/types/0").write_text("RoCE v2\n")
        if at is not None:
            (port / f"gids/{at}").write_text(V4.format(n + 1) + "\n")
            (port / f"gid_attrs/types/{at}").write_text("RoCE v2\n")
    return tree


HCAS = ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]


def test_roce_gid_index_one_value_differing_or_unread(rails: Path, tmp_path: Path) -> None:
    same = compute(TreeHost(_roce(rails, tmp_path / "a", dict.fromkeys(HCAS, 3))))[1]
    assert same.values()["NCCL_IB_GID_INDEX"] == "3"
    mixed = dict.fromkeys(HCAS, 3) | {"mlx5_9": 5}
    differ = compute(TreeHost(_roce(rails, tmp_path / "b", mixed)))[1]
    var = next(v for v in differ.variables if v.name == "NCCL_IB_GID_INDEX")
    assert var.value is None and "differs" in var.why and "mlx5_9 5" in var.why
    none = dict.fromkeys(HCAS, 3) | {"mlx5_0": None}
    unset = compute(TreeHost(_roce(rails, tmp_path / "c", none)))[1]
    var = next(v for v in unset.variables if v.name == "NCCL_IB_GID_INDEX")
    assert var.value is None and var.why.startswith("mlx5_0: no RoCE v2 GID with an IPv4")


def _if(name: str, state: str = "up", kind: str = "ether", virtual: bool = False) -> Interface:
    return Interface(name, state, True, None, None, 1500, 1, kind, None, virtual)


@pytest.mark.parametrize(
    ("ifaces", "route", "value"),
    [
        ([_if("eth0"), _if("docker0", virtual=True)], "eth0", "=eth0"),
        ([_if("eno1"), _if("docker0", virtual=True)], "docker0", "=eno1"),  # never docker
        ([_if("bond0", virtual=True), _if("eno1", "down")], None, "=bond0"),  # a bond counts
        ([_if("lo", "unknown", "loopback")], "lo", None),
        ([], None, None),
    ],
)
def test_socket_ifname(ifaces: list[Interface], route: str | None, value: str | None) -> None:
    assert _socket_ifname(ifaces, route, "").value == value


@pytest.mark.parametrize(
    ("name", "virtual"),
    [
        ("lo", True),
        ("docker0", True),
        ("veth12ab", True),
        ("br-3f2a", True),
        ("cni0", True),
        ("eth0", False),
        ("ens1f0np0", False),
        ("bond0", False),
        ("ib0", False),
    ],
)
def test_virtual_names(name: str, virtual: bool) -> None:
    assert virtual_name(name) is virtual


def test_launch_env_is_empty_with_a_site_nccl_conf_or_without_gpus(
    rails: Path, tmp_path: Path
) -> None:
    assert launch_env(TreeHost(rails))["NCCL_NET_GDR_LEVEL"] == "PXB"
    tree = tmp_path / "t"
    shutil.copytree(rails, tree, symlinks=True)
    (tree / "etc/nccl.conf").write_text("NCCL_DEBUG=WARN\n")
    assert launch_env(TreeHost(tree)) == {}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert launch_env(TreeHost(empty)) == {}


def test_shell_lines_keep_what_the_job_has() -> None:
    text = shell_lines({"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_X": "a b'c"})
    assert text == (
        '[ -n "${NCCL_IB_HCA+x}" ] || export NCCL_IB_HCA==mlx5_0:1\n'
        "[ -n \"${NCCL_X+x}\" ] || export NCCL_X='a b'\"'\"'c'\n"
    )


def test_conf_merge_keeps_the_sites_lines_and_replaces_its_block() -> None:
    values = {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "=eth0"}
    why = {"NCCL_IB_HCA": "closest", "NCCL_SOCKET_IFNAME": "route"}
    fresh = merged(None, values, why)
    assert fresh.splitlines()[0] == BEGIN and fresh.splitlines()[-1] == END
    assert parse_conf(fresh) == values
    site = "# site\nNCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5\n"
    once = merged(site, values, why)
    assert parse_conf(once) == {**values, "NCCL_DEBUG": "WARN"}
    assert "# (replaced by dolmen nccl env) NCCL_IB_HCA=mlx5" in once
    assert merged(once, values, why) == once  # writing again replaces the block
    assert parse_conf("#NCCL_A=1\n=x\nNCCL_B = 2\nNCCL_B=3\n") == {"NCCL_B": "2"}


def test_a_bundles_odd_names_never_reach_nccl_conf(rails: Path, tmp_path: Path) -> None:
    """An HCA named with a newline and an escape (a hostile bundle) is never chosen: its
    GPU's HCA is then unknown, and no line of /etc/nccl.conf comes from the name."""
    tree = tmp_path / "tree"
    shutil.copytree(rails, tree, symlinks=True)
    ib = tree / "sys/class/infiniband"
    evil = "mlx5_0\nNCCL_DEBUG=TRACE\x1b[31m"
    (ib / "mlx5_0").rename(ib / evil)
    _, env = compute(TreeHost(tree))
    values = env.values()
    assert "NCCL_IB_HCA" not in values  # GPU0's closest HCA has no name NCCL may be given
    text = merged(None, values, {v.name: v.why for v in env.variables})
    assert "NCCL_DEBUG" not in parse_conf(text) and "\x1b" not in text
    assert all(line.startswith("#") or "=" in line for line in text.splitlines())


@pytest.mark.parametrize("name", ["eth0\nNCCL_DEBUG=INFO", "eth\x1b[31m0", "a,b", "=eth0", ""])
def test_socket_ifname_refuses_names_that_are_not_plain(name: str) -> None:
    assert _socket_ifname([_if(name)], name, "").value is None
