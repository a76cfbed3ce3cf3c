"""The pure parsers and validators of the new setting kinds, on real output and malformed input:
``lspci -vvv`` (the recorded H100 HGX host and this machine's own), ``setpci`` read for real
(read only), ``ethtool -g/-k/-i`` and ``ip -o link``, daemon.json, mount tables."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from dolmen.facts.storage import parse_mounts
from dolmen.host.live import LiveHost
from dolmen.tune.model import Target
from dolmen.tune.settings import SETTINGS
from dolmen.tune.settings.acs import describe, flags_value, parse_acs, parse_register
from dolmen.tune.settings.base import Entry
from dolmen.tune.settings.caches import mount_of, refusal
from dolmen.tune.settings.docker import NotAnObject, load, merged
from dolmen.tune.settings.ethtool_text import (
    parse_driver,
    parse_features,
    parse_links,
    parse_rings,
)
from tests.conftest import recording


def test_acs_of_the_recorded_h100_hgx() -> None:
    ports = parse_acs(recording("lspci/gpud__lspci-vvv").read_text())
    by = {p.bdf: p for p in ports}
    assert by["0000:17:01.0"].port == "Downstream Port" and by["0000:17:01.0"].control == 0
    assert by["0000:82:00.0"].control == 0b11101  # SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+
    assert by["0000:00:0c.0"].port == "Root Port" and by["0000:00:0c.0"].control == 1
    assert by["0000:18:00.0"].port == "Endpoint" and by["0000:18:00.0"].control is None
    assert sum(p.port == "Downstream Port" for p in ports) == 38


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-", 0),
        ("SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-", 0x1D),
        ("SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+", 0x7F),
        ("SrcValid+ ReqRedir+", None),  # cut off: never a guess
        ("<access denied>", None),
        ("", None),
    ],
)
def test_acs_flags(text: str, value: int | None) -> None:
    assert flags_value(text) == value


def test_acs_malformed_lspci_and_register_words() -> None:
    junk = "garbage\n\tACSCtl: SrcValid+\n\n99:zz.0 bridge\nzz\n"
    assert parse_acs(junk) == []
    assert parse_register("001d\n") == 0x1D and parse_register("") is None
    assert parse_register("setpci: no such capability") is None
    assert describe(0x1D) == "SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+"
    assert describe(0) == "none" and "bits 7-15" in describe(0x81)


@pytest.mark.skipif(shutil.which("lspci") is None, reason="pciutils (lspci, setpci) not installed")
def test_acs_reads_this_machines_real_config_space() -> None:
    """This VM's own lspci -vvv parses (no switch here); setpci's real read of a function
    without ACS fails and the read says so; and in a VM the kind refuses outright."""
    out = subprocess.run(["lspci", "-vvv"], capture_output=True, text=True).stdout
    ports = parse_acs(out)
    assert len(ports) == len(
        subprocess.run(["lspci"], capture_output=True, text=True).stdout.splitlines()
    )
    assert not [p for p in ports if p.port == "Downstream Port"]
    host, acs = LiveHost(), SETTINGS["pcie_acs"]
    target = Target("pcie_acs", "downstream_ports", "x", "0000", extra={"bdf": ports[0].bdf})
    got = acs.read(host, target)
    assert got.value is None and "could not be read" in got.skip
    reason = acs.targets(host, Entry("pcie_acs", "downstream_ports", "0000"))
    assert isinstance(reason, str) and ("virtual machine" in reason or "downstream" in reason)


# ethtool 6.1 output forms (a mlx5 ConnectX-7 port, a driver without mini/jumbo rings)
RINGS_MLX5 = """Ring parameters for ens1f0np0:
Pre-set maximums:
RX:\t\t\t8192
RX Mini:\t\tn/a
RX Jumbo:\t\tn/a
TX:\t\t\t8192
Current hardware settings:
RX:\t\t\t1024
RX Mini:\t\tn/a
RX Jumbo:\t\tn/a
TX:\t\t\t1024
RX Buf Len:\t\tn/a
CQE Size:\t\tn/a
TX Push:\t\toff
TCP data split:\t\tn/a
"""


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (RINGS_MLX5, (8192, 8192, 1024, 1024)),
        ("Ring parameters for eth2:\nPre-set maximums:\nRX: 2047\nRX Mini: 0\nTX: 511\n"
         "Current hardware settings:\nRX: 200\nTX: 511\n", (2047, 511, 200, 511)),
        ("Pre-set maximums:\nRX: n/a\nCurrent hardware settings:\nRX: 5\n", (None, None, 5, None)),
        ("netlink error: Operation not supported\n", None),
        ("", None),
    ],
)  # fmt: skip
def test_ring_sizes(text: str, want: tuple[int | None, ...] | None) -> None:
    got = parse_rings(text)
    assert (None if got is None else (got.rx_max, got.tx_max, got.rx, got.tx)) == want


def test_features_drivers_and_links() -> None:
    k = parse_features(
        "Features for va:\nrx-checksumming: on\nlarge-receive-offload: off [fixed]\n"
        "tx-nocache-copy: off\nrx-lro: off [requested on]\n\ttx-tcp-segmentation: on\njunk line\n"
    )
    assert k["large-receive-offload"].fixed and not k["large-receive-offload"].on
    assert k["tx-nocache-copy"].on is False and not k["tx-nocache-copy"].fixed
    assert k["tx-tcp-segmentation"].on and "junk" not in str(k)
    assert parse_driver("driver: veth\nversion: 1.0\nbus-info: \n") == ("veth", None)
    assert parse_driver("driver: mlx5_core\nbus-info: 0000:1a:00.0\n") == (
        "mlx5_core",
        "0000:1a:00.0",
    )
    assert parse_driver("junk") == (None, None)
    links = (
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN\n"
        "3: va@vb: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN\n"
        "4: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000\n"
        "not a link line\n"
    )
    assert parse_links(links) == ["va", "ens1f0np0"]


def test_daemon_json_merge_keeps_keys_and_refuses_junk() -> None:
    text = '{"log-driver": "json-file", "runtimes": {"nvidia": {"path": "x"}}}'
    out = merged(text, "default-shm-size", "1G")
    assert list(load(out)) == ["log-driver", "runtimes", "default-shm-size"]
    assert merged("", "default-shm-size", "1G") == '{\n    "default-shm-size": "1G"\n}\n'
    for bad in ("{", "null", '"x"', '{"a": {"b": 1, "b": 2}}'):
        with pytest.raises(NotAnObject):
            load(bad)


def test_mounts_pick_the_deepest_and_refuse_network_and_memory() -> None:
    mounts = parse_mounts(
        "/dev/vda1 / ext4 rw 0 0\n/dev/md0 /raid xfs rw 0 0\n"
        "nas:/x /raid/shared nfs4 rw 0 0\ntmpfs /run tmpfs rw 0 0\n/dev/sdb /ro ext4 ro 0 0\n"
    )
    assert mount_of(mounts, "/raid/c").mountpoint == "/raid"  # type: ignore[union-attr]
    assert mount_of(mounts, "/raid/shared/c").fstype == "nfs4"  # type: ignore[union-attr]
    assert mount_of(mounts, "/raidx").mountpoint == "/"  # type: ignore[union-attr]
    assert refusal(mount_of(mounts, "/raid/c"), "/raid/c") is None  # type: ignore[arg-type]
    assert "network" in (refusal(mount_of(mounts, "/raid/shared/c"), "/x") or "")  # type: ignore[arg-type]
    assert "read-only" in (refusal(mount_of(mounts, "/ro/c"), "/ro/c") or "")  # type: ignore[arg-type]
    assert mount_of([], "/x") is None


@pytest.mark.parametrize(
    ("section", "key", "value", "fields", "error"),
    [
        ("caches", "folder", "relative/path", {}, "absolute path"),
        ("caches", "folder", "/raid/$(reboot)", {}, "absolute path"),
        ("caches", "folder", "/raid/../etc", {}, "not a folder of its own"),
        ("caches", "folder", "/raid/c", {"cuda_max_size": "8GiB"}, "4 GiB"),
        ("caches", "folder", "/raid/c", {"caches": ["cudnn"]}, "valid choices: cuda"),
        ("modules", "nvidia-peermem", "unload", {}, "valid choices: load"),
        ("modules", "nvidia.NVreg_X", "a b", {}, "one word"),
        ("modules", "nvidia.NVreg_X", True, {}, "a number or one word"),
        ("docker", "default-shm-size", "lots", {}, "size as Docker writes it"),
        ("net", "rx_ring", 0, {}, '"max" or a ring size'),
        ("net", "large-receive-offload", "yes", {}, "valid choices: on, off"),
        ("net", "rx_ring", "max", {"drivers": "mlx5_core"}, "list of driver names"),
        ("pcie_acs", "downstream_ports", "enabled", {}, "valid choices: disabled"),
        ("pcie_power", "gpu_bridges", "off", {}, "valid choices: on, auto"),
    ],
)
def test_values_are_refused_naming_the_valid_ones(
    section: str, key: str, value: object, fields: dict, error: str
) -> None:
    with pytest.raises(ValueError, match=error.replace("(", r"\(").replace("$", r"\$")):
        SETTINGS[section].validate(key, value, fields)


@pytest.mark.parametrize(
    ("section", "raw", "key"),
    [
        ("net", "lro", "large-receive-offload"),
        ("net", "gro", "generic-receive-offload"),
        ("net", "tx-nocache-copy", "tx-nocache-copy"),
        ("modules", "nvidia.NVreg_EnableGpuFirmware", "nvidia.NVreg_EnableGpuFirmware"),
    ],
)
def test_keys(section: str, raw: str, key: str) -> None:
    assert SETTINGS[section].key(raw) == key
    for bad in ("", "UPPER CASE", "a/b"):
        with pytest.raises(ValueError):
            SETTINGS[section].key(bad)
