"""The ``[packages]`` setting on its own: tokens, commands, validation, reading a tree; the
KB rules the plan cites are in the KB; the live machine's real dpkg database, read only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from dolmen.kb import load_kb
from dolmen.stack.observe import observe
from dolmen.stack.packages import manager_argv, read_packages
from dolmen.tune.model import Action
from dolmen.tune.settings import SETTINGS
from dolmen.tune.settings.packages import commands, package_target, render, tokens
from tests.stack.nodes import PACKAGES, node


def test_tokens_round_trip() -> None:
    state = {"libnccl2": ("2.21.5-1+cuda12.4", True), "nvidia-driver-550": (None, False)}
    text = render(state)
    assert text == "libnccl2=2.21.5-1+cuda12.4[held] nvidia-driver-550=(none)"
    assert tokens(text) == state


def test_commands_apt_and_dnf() -> None:
    apt = commands("apt", {"libnccl2": "2.21.5-1", "a": "1"})
    assert apt == [
        [
            "apt-get",
            "install",
            "-y",
            "--allow-downgrades",
            "--allow-change-held-packages",
            "a=1",
            "libnccl2=2.21.5-1",
        ],
        ["apt-mark", "hold", "a", "libnccl2"],
    ]
    dnf = commands("dnf", {"nvidia-driver": "3:550.127.05-1.el9"}, module="nvidia-driver:550-open")
    assert dnf[0] == ["dnf", "module", "enable", "-y", "nvidia-driver:550-open"]
    assert dnf[-1] == ["dnf", "versionlock", "add", "nvidia-driver-3:550.127.05-1.el9"]


@pytest.mark.parametrize("value", ["", "latest; rm -rf /", 3, "-1"])
def test_validate_refuses_what_is_not_a_version(value: object) -> None:
    with pytest.raises(ValueError, match="not a package version"):
        SETTINGS["packages"].validate("libnccl2", value, {})


def test_a_tree_is_read_never_changed(tmp_path: Path) -> None:
    host = TreeHost(node(tmp_path / "n", held=("libnccl2",)))
    setting = SETTINGS["packages"]
    ok = package_target("apt", {"libnccl2": PACKAGES["libnccl2"]})
    reading = setting.read(host, ok)
    assert reading.value == f"libnccl2={PACKAGES['libnccl2']}[held]" and "host tree" in reading.skip
    assert setting.plan(ok, reading).action is Action.SKIP
    assert manager_argv(host, ["apt-get", "install"])[:2] == [
        "env",
        "DEBIAN_FRONTEND=noninteractive",
    ]


def test_every_rule_the_plan_cites_is_in_the_kb() -> None:
    ids = {r.id for r in load_kb().cuda.rules}
    assert {"minor-version", "open-modules-blackwell", "fabricmanager-equals-driver"} <= ids


def test_this_machines_real_dpkg_database_read_only() -> None:
    if not os.path.exists("/var/lib/dpkg/status"):
        pytest.skip("this machine has no dpkg database")
    db = read_packages(LiveHost())
    assert db.manager == "apt" and "dpkg" in db.installed and db.installed["dpkg"].version
    lock = observe(LiveHost())
    assert lock.by_id()["kernel"].version == os.uname().release
    assert all(c.known or c.reason for c in lock.components)
