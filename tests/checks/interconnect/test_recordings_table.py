"""Every InfiniBand/RoCE recording alone, as a user pastes it, with the conclusion written from
the file itself and PROVENANCE.md: which (check, subject) fail, and nothing else fails.

Files: recordings/infiniband/* (ibstat, ibstatus), sysfs/gcm__*.json (GCM's learn maps, and
its DGX A100 manifest as the site's [validate] expectations), sysfs/gpud__sys-class-
infiniband-h100.0, and the kernel logs with link lines. Azure's 6-flap syslog is not among
the recordings (only its 0-flap control is): its six lines are written here in its format.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dolmen.checks import load_registry
from dolmen.checks.context import Context
from dolmen.checks.model import Status
from dolmen.checks.runner import run_one
from dolmen.config import Config
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording
from tests.facts.trees import load_sysfs_map

CHECKS = (
    "interconnect.ib.port_state",
    "interconnect.ib.rate",
    "interconnect.ib.sources_agree",
    "interconnect.ib.rails",
    "interconnect.ib.errors",
    "interconnect.ib.flaps",
    "interconnect.roce",
    "interconnect.nic.link",
)
Verdicts = dict[tuple[str, str], Status]


def _verdicts(root: Path, validate: dict[str, Any] | None = None) -> Verdicts:
    config = Config(sections={"validate": validate}) if validate else None
    ctx = Context(TreeHost(root), config=config)
    registry = load_registry()
    return {(check, f.subject): f.status for check in CHECKS for f in run_one(ctx, registry[check])}


def _failing(v: Verdicts) -> set[tuple[str, str]]:
    return {k for k, s in v.items() if s is Status.FAIL}


def _pasted(root: Path, key: str, text: str, rc: int = 0, err: str = "") -> Path:
    """A one-file bundle: a partial tree with the file under its command key."""
    make_tree(root, files={"dolmen-snapshot.json": json.dumps({"partial": True})})
    return make_tree(root, commands={key: (text, rc, err)})


IB = "infiniband/gpud__"
PORT = "interconnect.ib.port_state"
ROCE = "interconnect.roce"

# file -> (command key, the (check, subject) pairs that must fail: nothing else may)
TOOLS: dict[str, tuple[str, set[tuple[str, str]]]] = {
    # ibpanic: an HCA vanished after eight were printed (it was all-pass).
    "ibstat.39.0.a100.failed.ibpanic.exit-255.0": ("ibstat", {(PORT, "ib:mlx5_8")}),
    "ibstat.47.0.a100.all.active.0": ("ibstat", set()),
    "ibstat.47.0.h100.all.active.0": ("ibstat", set()),
    "ibstat.47.0.h100.all.active.2": ("ibstat", set()),
    # Three of four ConnectX-6 Dx front-end ports set down, one active: not in use.
    "ibstat.47.0.h100.some.down.0": ("ibstat", set()),
    # Two of eight ConnectX-7 RoCE rails down while six are ACTIVE (GPUd: unhealthy).
    "ibstat.47.0.h100.some.down.with.polling.1": (
        "ibstat",
        {(ROCE, "ib:mlx5_11/1"), (ROCE, "ib:mlx5_5/1")},
    ),
    "ibstatus.39.0.a100.all.active.0": ("ibstatus", set()),
}


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_tool_output_alone(tmp_path: Path, name: str) -> None:
    key, fails = TOOLS[name]
    text = recording(IB + name).read_text()
    v = _verdicts(_pasted(tmp_path, key, text))
    assert _failing(v) == fails
    assert not any(s is Status.ERROR for s in v.values())
    # The port checks ran: the bundle shows ports, so nothing says "no InfiniBand here".
    assert (PORT, "host") not in v or v[(PORT, "host")] is not Status.SKIP or key == "ibstat"


def test_ibpanic_with_its_exit_code(tmp_path: Path) -> None:
    text = recording(IB + "ibstat.39.0.a100.failed.ibpanic.exit-255.0").read_text()
    err = text.strip().splitlines()[-1]
    v = _verdicts(_pasted(tmp_path, "ibstat", text, 255, err))
    assert _failing(v) == {(PORT, "ib:mlx5_8")}
    assert sum(s is Status.PASS for (c, _), s in v.items() if c == PORT) == 8


GCM = "sysfs/gcm__learn_{}.json"
RATE = "interconnect.ib.rate"
LINK = "interconnect.nic.link"
RAILS = ("interconnect.ib.rails", "host")
EIGHT = {f"ib:mlx5_{n}/1" for n in (0, 1, 2, 3, 6, 7, 8, 9)}

# GCM's check_iblink table (gcm/tests/test_check_iblink.py): good OK, stuck WARN (6 up),
# bad rate CRITICAL (0 up), operstate down CRITICAL (LINK_OPERSTATE_DOWN).
GCM_MAPS: dict[str, tuple[set[tuple[str, str]], Status]] = {
    "good": (set(), Status.PASS),
    "ib_intf_bad_rate": ({(RATE, s) for s in EIGHT}, Status.FAIL),
    "ib_intf_operstate_down": ({(LINK, "nic:ib4")}, Status.PASS),
    # INIT ports fail port_state (unusable; GCM only warns), and their netdevs have no carrier.
    "stuck_ib_intf": (
        {(PORT, "ib:mlx5_6/1"), (PORT, "ib:mlx5_8/1"), (LINK, "nic:ib4"), (LINK, "nic:ib6")},
        Status.FAIL,
    ),
}


def _manifest() -> dict[str, Any]:
    """GCM's DGX A100 manifest as the site's expectations: its link rate and interfaces."""
    doc = json.loads(recording("sysfs/gcm__DGX_A100.json").read_text())
    rate = float(doc["ib"]["link_rate"].split()[0])
    return {"expected_ib_rate": rate, "expected_ib_ports": len(doc["ib"]["interfaces"])}


@pytest.mark.parametrize("name", sorted(GCM_MAPS))
def test_gcm_maps(tmp_path: Path, name: str) -> None:
    fails, rails = GCM_MAPS[name]
    root = load_sysfs_map(recording(GCM.format(name)), tmp_path)
    v = _verdicts(root)
    assert _failing(v) == fails
    assert v[RAILS] is Status.SKIP  # no site expectation
    with_manifest = _verdicts(root, _manifest())
    assert with_manifest[RAILS] is rails
    assert _failing(with_manifest) - {RAILS} == fails


def test_gpud_h100_sysfs_tree_alone(tmp_path: Path) -> None:
    """The real H100 sysfs tree, nothing else: healthy; counters over their limits with the
    uptime not in the bundle are unknown, never per-day warnings."""
    shutil.copytree(
        recording("sysfs/gpud__sys-class-infiniband-h100.0"), tmp_path / "sys/class/infiniband"
    )
    v = _verdicts(tmp_path)
    assert _failing(v) == set()
    assert not any(s is Status.WARN for s in v.values())
    assert v[("interconnect.ib.errors", "ib:mlx5_0/1")] is Status.UNKNOWN
    assert v[("interconnect.ib.flaps", "ib:mlx5_1/1")] is Status.UNKNOWN  # link_downed 255
    assert sum(s is Status.PASS for (c, _), s in v.items() if c == PORT) == 8
    assert v[("interconnect.ib.sources_agree", "host")] is Status.SKIP  # ibstat not in it


FLAPS = "interconnect.ib.flaps"
# Azure/azurehpc-health-checks test/data/1dev_6flap_syslog's shape (MIT): systemd-networkd on
# an ND VM, six losses then six recoveries in one second. Written here, not copied.
SIX = "".join(
    f"Aug 17 06:18:0{6 if i else 1} vm-0 systemd-networkd[5398]: ib6: {what} carrier\n"
    for what in ("lost", "Gained")
    for i in range(6)
)

# kernel log -> the flaps finding on it, with no port in the bundle
LOGS: dict[str, tuple[str, Status]] = {
    "kernel-logs/azurehpc__0flap_syslog": ("host", Status.SKIP),  # no link line at all
    "kernel-logs/gpud__dmesg.decode.iso.log.1": ("host", Status.PASS),  # mlx5 boot lines only
    "kernel-logs/gpud__pstore_7530486857247_dmesg.txt": ("host", Status.PASS),  # a Link up
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_kernel_logs_alone(tmp_path: Path, name: str) -> None:
    subject, status = LOGS[name]
    v = _verdicts(_pasted(tmp_path, "dmesg", recording(name).read_text() + "\n"))
    assert v[(FLAPS, subject)] is status
    assert _failing(v) == set()
    if status is Status.SKIP:
        assert v[(PORT, "host")] is Status.SKIP


def test_six_lost_carrier_lines_alone_fail_without_a_port(tmp_path: Path) -> None:
    clean = recording("kernel-logs/azurehpc__0flap_syslog").read_text() + "\n"
    v = _verdicts(_pasted(tmp_path, "dmesg", clean + SIX))
    assert _failing(v) == {(FLAPS, "nic:ib6")}  # six losses; the recoveries are not losses


def test_nothing_of_the_interconnect_in_the_bundle(tmp_path: Path) -> None:
    """A bundle without any IB source or kernel log: every check says what is missing,
    none claims the host has no InfiniBand or no flaps."""
    root = _pasted(tmp_path, "nvidia-smi", "irrelevant")
    ctx = Context(TreeHost(root))
    registry = load_registry()
    for check in CHECKS:
        for f in run_one(ctx, registry[check]):
            assert f.status in (Status.SKIP, Status.UNKNOWN), (check, f.summary)
            assert "on this host" not in f.summary, (check, f.summary)
            if check != "interconnect.ib.rails":
                assert "not in this bundle" in f.summary, (check, f.summary)
    (f,) = run_one(ctx, registry[FLAPS])
    assert f.summary.startswith("not in this bundle: sys/class/infiniband")
    assert "the kernel log could not be read" in f.summary
