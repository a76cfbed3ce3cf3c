"""Conformance: every setting kind in the registry holds to the contract (STYLE.md rules 5, 7,
9, 12): a documented module of its own under 300 lines, a section and title, junk keys and
values refused with a ValueError that names what is valid, a plan that is pure (the same
row twice from the same reading), a documented row in docs/tune.md, and no crash on an
empty host tree (every target either found or skipped with a reason)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.tune.model import Action, Effect, Reading, Target
from dolmen.tune.planner import plan_entries
from dolmen.tune.settings import PROFILE_SECTIONS, SETTINGS, Entry, Setting

REPO = Path(__file__).resolve().parents[2]
DOCS = (REPO / "docs/tune.md").read_text()
# A valid (key, value) of each profile section, as a profile would write it.
SAMPLES: dict[str, tuple[str, object]] = {
    "sysctl": ("vm.swappiness", 10),
    "sysfs": ("kernel/mm/transparent_hugepage/enabled", "madvise"),
    "pcie_power": ("gpu_bridges", "on"),
    "cpu": ("governor", "performance"),
    "hugepages": ("2M", None),
    "pcie_acs": ("downstream_ports", "disabled"),
    "net": ("lro", "on"),
    "gpu": ("persistence_mode", True),
    "services": ("irqbalance.service", "disabled"),
    "irq": ("irqbalance", "stop"),
    "limits": ("memlock", "unlimited"),
    "docker": ("default-shm-size", "1G"),
    "caches": ("folder", "auto"),
    "modules": ("nvidia-peermem", "load"),
    "packages": ("libnccl2", "2.21.5-1+cuda12.4"),
    "cmdline": ("iommu", "pt"),
}
FIELDS: dict[str, dict[str, object]] = {"hugepages": {"total": 8}}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_each_kind_is_a_documented_module_of_its_own(name: str) -> None:
    setting = SETTINGS[name]
    assert isinstance(setting, Setting) and setting.section == name
    assert setting.title and type(setting).__doc__
    module = inspect.getmodule(type(setting))
    assert module is not None and module.__doc__, "the module says what it reads and writes"
    assert len(inspect.getsource(module).splitlines()) < 300
    assert isinstance(setting.effect, Effect)
    owners = [s for s in SETTINGS.values() if inspect.getmodule(type(s)) is module]
    assert owners == [setting], "one setting kind per module"


@pytest.mark.parametrize("name", PROFILE_SECTIONS)
def test_each_profile_section_validates_and_refuses_naming_the_valid(name: str) -> None:
    assert f"`[{name}]`" in DOCS, "docs/tune.md lists every profile section"
    setting = SETTINGS[name]
    key, value = SAMPLES[name]
    canon = setting.key(key)
    assert setting.validate(canon, value, FIELDS.get(name, {}))
    with pytest.raises(ValueError) as junk:
        setting.validate(canon, {"not": "a value"}, {})
    assert str(junk.value), "a refusal says why"
    with pytest.raises(ValueError) as bad:
        setting.key("no such key !")
    # a kind whose keys are a fixed set (Setting.keys) names each of them
    assert all(valid in str(bad.value) for valid in setting.keys or ())


@pytest.mark.parametrize("name", PROFILE_SECTIONS)
def test_plans_are_pure_and_an_empty_host_gives_reasons_not_errors(
    name: str, tmp_path: Path
) -> None:
    setting = SETTINGS[name]
    key, value = SAMPLES[name]
    canon = setting.key(key)
    fields = FIELDS.get(name, {})
    entry = Entry(name, canon, setting.validate(canon, value, fields), fields=fields)
    (tmp_path / "commands").mkdir()
    host = TreeHost(tmp_path)
    for change in plan_entries(host, [entry], "x86_64"):
        assert change.action in Action
        if change.action is Action.SKIP:
            assert change.reason, f"{name}: a skip names its reason"
    t = Target(name, canon, "t", entry.value)
    for reading in (Reading(None), Reading(entry.value), Reading(None, skip="why")):
        assert setting.plan(t, reading) == setting.plan(t, reading)
    assert setting.plan(t, Reading(None, skip="why")).action is Action.SKIP
