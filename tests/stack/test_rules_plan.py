"""The KB rules refuse an impossible lock before any command is printed; the plan's
commands on apt (versions, holds, NVIDIA's repository) and dnf (module stream)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.errors import InputError
from dolmen.host.tree import TreeHost
from dolmen.kb import load_kb
from dolmen.stack.model import Component, Lock, Package
from dolmen.stack.observe import observe
from dolmen.stack.packages import PackageDb, read_packages, read_sources
from dolmen.stack.plan import LockRefused, build_plan
from dolmen.stack.rules import check_lock
from tests.conftest import make_tree
from tests.report.contract import assert_valid
from tests.stack.nodes import PACKAGES, node


def _lock(*comps: Component, archs: tuple[str, ...] = ("Hopper",), manager: str = "apt") -> Lock:
    return Lock("ref", "ubuntu", "22.04", "x86_64", manager, comps, archs)


def _driver(version: str, flavour: str = "open") -> Component:
    return Component(
        "driver",
        "driver",
        version,
        "x",
        details={"branch": version.split(".")[0], "flavour": flavour},
        packages=(Package("nvidia-driver-550", f"{version}-0ubuntu1", "apt"),),
    )


@pytest.mark.parametrize(
    ("lock", "rule"),
    [
        (
            _lock(
                _driver("470.256.02"), Component("cuda:/usr/local/cuda-12.4", "cuda", "12.4.1", "x")
            ),
            "minor-version",
        ),
        (
            _lock(_driver("570.86.15", "proprietary"), archs=("Blackwell",)),
            "open-modules-blackwell",
        ),
        (
            _lock(
                _driver("570.86.15"),
                Component("fabric-manager", "fabric-manager", "570.124.06", "x"),
            ),
            "fabricmanager-equals-driver",
        ),
    ],
)
def test_each_rule_refuses_an_impossible_lock(lock: Lock, rule: str) -> None:
    kb = load_kb()
    violations, _ = check_lock(lock, kb)
    assert [v.rule for v in violations] == [rule]
    assert violations[0].source and violations[0].text != "(rule not in the KB)"
    with pytest.raises(LockRefused, match=rule) as e:
        build_plan(lock, lock, PackageDb("apt"), None, kb)
    assert e.value.exit_code == 2


def test_a_possible_lock_passes_and_says_what_it_could_not_check() -> None:
    lock = _lock(
        _driver("550.127.05"),
        Component("cuda:/usr/local/cuda-12.4", "cuda", "12.4.1", "x"),
        Component("fabric-manager", "fabric-manager", "550.127.05", "x"),
    )
    violations, notes = check_lock(lock, load_kb())
    assert violations == [] and notes == []
    unsure = _lock(Component("driver", "driver", "570.86.15", "x"), archs=("Blackwell",))
    assert check_lock(unsure, load_kb())[1] == [
        "open modules for Blackwell not checked: the lock does not say the module flavour"
    ]


def test_apt_plan_installs_holds_and_adds_nvidias_repository(tmp_path: Path) -> None:
    lock = observe(TreeHost(node(tmp_path / "ref")))
    older = {**PACKAGES, "libnccl2": "2.26.2-1+cuda12.8"}
    host = TreeHost(node(tmp_path / "odd", older, held=("nvidia-driver-580-open",)))
    plan = build_plan(lock, observe(host), read_packages(host), read_sources(host), load_kb())
    actions = {p.name: p.action for p in plan.packages}
    assert actions["libnccl2"] == "install" and actions["nvidia-driver-580-open"] == "ok"
    assert actions["nvidia-container-toolkit"] == "hold"
    assert plan.repository[0][-1].endswith("/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb")
    doc = assert_valid(plan.to_json([["apt-get", "install"]]))
    assert doc["counts"]["install"] == 1


def test_dnf_plan_enables_the_driver_stream(tmp_path: Path) -> None:
    rpm = "nvidia-driver\t3:550.127.05-1.el9\nlibnccl\t0:2.21.5-1+cuda12.4\n"
    tree = make_tree(
        tmp_path / "rhel",
        files={
            "etc/os-release": 'ID="rhel"\nVERSION_ID="9.4"\n',
            "etc/yum.repos.d/cuda-rhel9.repo": "baseurl=https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64\n",
        },
        commands={"rpm -qa --qf %{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n": rpm},
    )
    host = TreeHost(tree)
    here = observe(host)
    lock = _lock(_driver("550.127.05"), manager="dnf")
    lock = Lock(
        lock.host,
        "rhel",
        "9.4",
        "x86_64",
        "dnf",
        (
            Component(
                "driver",
                "driver",
                "550.127.05",
                "x",
                details={"branch": "550", "flavour": "open"},
                packages=(Package("nvidia-driver", "3:550.127.05-1.el9", "dnf"),),
            ),
            Component(
                "nccl",
                "nccl",
                "2.21.5",
                "x",
                packages=(Package("libnccl", "2.21.5-1+cuda12.4", "dnf"),),
            ),
        ),
    )
    plan = build_plan(lock, here, read_packages(host), read_sources(host), load_kb())
    assert plan.manager == "dnf" and plan.module_stream == "nvidia-driver:550-open"
    assert plan.repository == () and {p.action for p in plan.packages} == {"hold"}


def test_a_lock_of_another_package_manager_is_refused(tmp_path: Path) -> None:
    host = TreeHost(node(tmp_path / "n"))
    lock = Lock("ref", "rhel", "9.4", "x86_64", "dnf", ())
    with pytest.raises(InputError, match="this host uses apt"):
        build_plan(lock, observe(host), read_packages(host), None, load_kb())
