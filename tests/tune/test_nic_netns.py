"""``[net]`` with the real ethtool on a real veth pair inside a network namespace this test
creates and deletes: a feature the driver lets change is applied, verified, changed behind
dolmen's back, rolled back; what veth cannot do (ring sizes, LRO) is skipped with the
driver's own answer; and ethtool absent from the PATH is one clear reason."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tune.netns import SRC, in_ns, private_netns, tune_env

pytestmark = pytest.mark.netns

PROFILE = """\
[profile]
description = "NIC settings on a test veth"
persist = false
[net]
"tx-nocache-copy" = { value = "on", drivers = ["veth"], source = "test" }
lro = { value = "on", drivers = ["veth"] }
rx_ring = { value = "max", drivers = ["veth"] }
"""


@pytest.fixture
def veth_ns() -> Iterator[str]:
    if shutil.which("ethtool") is None:
        pytest.skip("ethtool is not installed (scripts/debian-packages.txt lists it)")
    with private_netns(f"dolmen-nic-{os.getpid()}") as name:
        link = in_ns(name, "ip", "link", "add", "dva", "type", "veth", "peer", "name", "dvb")
        if link.returncode != 0:
            pytest.skip(f"no veth here: {link.stderr.strip()}")
        yield name


def feature(ns: str, name: str) -> str:
    out = in_ns(ns, "ethtool", "-k", "dva").stdout
    return next(
        ln.split(":", 1)[1].split()[0] for ln in out.splitlines() if ln.startswith(name + ":")
    )


def test_nic_feature_apply_verify_rollback_on_a_real_veth(
    veth_ns: str, dolmen_dirs: Path, tmp_path: Path
) -> None:
    (dolmen_dirs / "profiles" / "nic.toml").write_text(PROFILE)
    env = tune_env(tmp_path / "state", dolmen_dirs)
    tune = [sys.executable, "-m", "dolmen.cli.main", "tune"]
    assert feature(veth_ns, "tx-nocache-copy") == "off"

    planned = in_ns(veth_ns, *tune, "plan", "nic", "--root", "/", "--json", env=env)
    rows = {c["target"]["name"]: c for c in json.loads(planned.stdout)["changes"]}
    # the peer dvb is planned too: both ends are veth
    assert rows["dva large-receive-offload"]["action"] == "skip"
    assert "fixed off by dva's driver" in rows["dva large-receive-offload"]["reason"]
    assert rows["dva rx_ring"]["action"] == "skip"
    assert "Operation not supported" in rows["dva rx_ring"]["reason"]
    assert rows["dva tx-nocache-copy"]["action"] == "change"

    applied = in_ns(veth_ns, *tune, "apply", "nic", "--root", "/", "--yes", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert feature(veth_ns, "tx-nocache-copy") == "on"
    assert in_ns(veth_ns, *tune, "verify", "--root", "/", env=env).returncode == 0
    in_ns(veth_ns, "ethtool", "-K", "dva", "tx-nocache-copy", "off")
    assert in_ns(veth_ns, *tune, "verify", "--root", "/", env=env).returncode == 1

    back = in_ns(veth_ns, *tune, "rollback", "--root", "/", "--yes", "--json", env=env)
    assert back.returncode == 0, back.stderr
    doc = json.loads(back.stdout)
    # dva was put back to its original by hand (a binary feature): not "changed by others"
    assert doc["complete"] and all(r["exact"] for r in doc["restored"])
    assert sorted(r["target"] for r in doc["restored"]) == [
        "dva tx-nocache-copy",
        "dvb tx-nocache-copy",
    ]
    assert feature(veth_ns, "tx-nocache-copy") == "off"


def test_ethtool_absent_is_one_clear_reason(
    veth_ns: str, dolmen_dirs: Path, tmp_path: Path
) -> None:
    (dolmen_dirs / "profiles" / "nic.toml").write_text(PROFILE)
    only_ip = tmp_path / "bin"
    only_ip.mkdir()
    os.symlink(shutil.which("ip") or "/usr/sbin/ip", only_ip / "ip")
    env = {"PATH": str(only_ip), "PYTHONPATH": str(SRC), "DOLMEN_STATE_DIR": str(tmp_path / "s"),
           "DOLMEN_CONFIG_DIR": str(dolmen_dirs), "COLUMNS": "200"}  # fmt: skip
    planned = in_ns(
        veth_ns, sys.executable, "-m", "dolmen.cli.main", "tune", "plan", "nic", "--root", "/",
        "--json", env=env,
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    rows = json.loads(planned.stdout)["changes"]
    assert {r["action"] for r in rows} == {"skip"}
    assert "ethtool did not run (missing: ethtool not found on PATH)" in rows[0]["reason"]
