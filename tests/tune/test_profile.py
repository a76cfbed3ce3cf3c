"""Profiles: the shipped ones load and cite a source for every value; bad input is refused
at load with the file, the line and the valid choices; include merges key by key."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.errors import ConfigError
from dolmen.tune.profile import SHIPPED, load_profile
from dolmen.tune.profile_file import parse_profile_text

SHIPPED_NAMES = sorted(p.stem for p in SHIPPED.glob("*.toml"))
REQUIRED = ("ai-training", "ai-training-multinode", "ai-inference", "workstation", "baseline")


def test_the_required_profiles_ship() -> None:
    assert set(REQUIRED) <= set(SHIPPED_NAMES)


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_shipped_profile_loads_and_cites_every_value(name: str) -> None:
    p = load_profile(name)
    assert p.description and p.shipped and p.entries
    for e in p.entries:
        assert e.source.strip(), f"{e.origin}: [{e.setting}] {e.key} has no source"
        assert any(mark in e.source for mark in ("[V]", "[S]", "[R]")), e.origin
        assert ".toml:" in e.origin


def test_multinode_includes_training_and_adds_nvidia_network_values() -> None:
    training = {(e.setting, e.key): e.value for e in load_profile("ai-training").entries}
    multi = {(e.setting, e.key): e for e in load_profile("ai-training-multinode").entries}
    assert set(training) < set(multi)
    assert multi[("sysctl", "net.core.rmem_max")].value == "536870912"
    assert multi[("sysctl", "net.ipv4.tcp_rmem")].value == "4096 87380 268435456"
    # where each value came from: inherited ones name the file that set them
    assert multi[("cpu", "governor")].origin.split("/")[-1].startswith("nvidia-base.toml:")
    assert multi[("sysctl", "vm.swappiness")].origin.split("/")[-1].startswith("ai-training.toml:")


def test_numa_balancing_off_carries_its_why() -> None:
    e = {(x.setting, x.key): x for x in load_profile("ai-training").entries}
    assert "20%" in e[("sysctl", "kernel.numa_balancing")].why


def test_order_is_setting_order_then_key_order() -> None:
    p = load_profile("ai-training-multinode")
    irq = [e.key for e in p.entries if e.setting == "irq"]
    assert irq == ["irqbalance", "affinity"]
    settings = [e.setting for e in p.entries]
    assert settings.index("sysctl") < settings.index("cmdline")


def _site(config: Path, name: str, text: str) -> Path:
    path = config / "profiles" / f"{name}.toml"
    path.write_text(text)
    return path


BAD = [
    ('[sysctl]\n"vm.swappiness" = 500\n', "out of range", 2, "0..200"),
    ('[cpu]\ngovernor = "turbo"\n', "not valid", 2, "performance"),
    ("[cpu]\nspeed = 1\n", "[cpu] key", 2, "governor"),
    ("[nonsense]\nx = 1\n", "unknown section [nonsense]", 1, "sysctl"),
    ("[profile]\nflavour = 1\n", "unknown key 'flavour'", 2, "description"),
    ('[profile]\npersist = "yes"\n', "wrong type", 2, None),
    ('[sysctl]\n"vm.swappiness" = { value = 10, sauce = "x" }\n', "unknown field", 2, "source"),
    ('[sysctl]\n"vm.swappiness" = true\n', "not true/false", 2, None),
    ('[sysctl]\n"vm.swappiness" = 10\n"vm/swappiness" = 20\n', "set twice", 3, "line 2"),
    ('[sysctl]\n"vm.swappiness" = 10\n"vm.swappiness" = 20\n', "not valid TOML", 3, None),
    ('[sysctl]\n"kernel.numa_balancing" = 0\n', "20%", 2, None),
    ('[cmdline]\nnuma_balancing = "disable"\n', "20%", 2, None),
    (
        '[sysfs]\n"kernel/mm/transparent_hugepage/enabled" = "sometimes"\n',
        "not valid",
        2,
        "madvise",
    ),
    ('[sysfs]\n"../../etc/passwd" = 1\n', "not a path below /sys", 2, None),
    ('[hugepages]\n"2M" = { per_node = 1, total = 2 }\n', "exactly one", 2, None),
    ('[hugepages]\n"3Q" = { total = 2 }\n', "not a huge page size", 2, "2048kB"),
    ("[limits]\nmemlock = 64\n", "with a unit", 2, "64MiB"),
    ('[services]\nirqbalance = "off"\n', "not valid", 2, "disabled"),
    ('[irq]\naffinity = { value = "local-numa", devices = ["gpu"] }\n', "devices", 2, "nic"),
    ('[cmdline]\niommu = { value = "pt", arch = "sparc" }\n', "arch", 2, "x86_64"),
    ('[gpu]\npersistence_mode = "yes"\n', "true or false", 2, None),
    ("[boot]\nx = 1\n", "unknown section [boot]", 1, None),
    # the fields of an entry written beside it (as docs/tune.md's example once showed)
    (
        '[caches]\nfolder = "auto"\ncuda_max_size = "2GiB"\n',
        "[caches] cuda_max_size is a field of an entry",
        3,
        "KEY = { value = ..., cuda_max_size = ... }",
    ),
    ('[net]\nlro = "on"\ndrivers = ["mlx5_core"]\n', "[net] drivers is a field", 3, "inside"),
]


@pytest.mark.parametrize(("text", "message", "line", "choice"), BAD)
def test_bad_profiles_are_refused_with_file_line_and_choices(
    dolmen_dirs: Path, text: str, message: str, line: int, choice: str | None
) -> None:
    path = _site(dolmen_dirs, "bad", text)
    with pytest.raises(ConfigError) as err:
        load_profile("bad")
    assert message in err.value.message
    assert err.value.path == str(path) and err.value.line == line
    if choice:
        assert choice in err.value.message


def test_malformed_bytes_are_a_config_error(dolmen_dirs: Path) -> None:
    (dolmen_dirs / "profiles" / "junk.toml").write_bytes(b"\xff\xfe[sys\x00")
    with pytest.raises(ConfigError):
        load_profile("junk")
    with pytest.raises(ConfigError, match=r"valid profiles: .*ai-training"):
        load_profile("no-such-profile")


def test_include_cycle_is_named(dolmen_dirs: Path) -> None:
    _site(dolmen_dirs, "a", '[profile]\ninclude = ["b"]\n')
    _site(dolmen_dirs, "b", '[profile]\ninclude = ["c"]\n')
    _site(dolmen_dirs, "c", '[profile]\ninclude = "a"\n')
    with pytest.raises(ConfigError, match="include cycle: a -> b -> c -> a") as err:
        load_profile("a")
    assert err.value.line == 2


def test_includes_that_disagree_must_be_settled(dolmen_dirs: Path) -> None:
    _site(dolmen_dirs, "x", '[sysctl]\n"vm.swappiness" = 10\n')
    _site(dolmen_dirs, "y", '[sysctl]\n"vm.swappiness" = 20\n')
    _site(dolmen_dirs, "xy", '[profile]\ninclude = ["x", "y"]\n')
    with pytest.raises(ConfigError, match=r"disagree on \[sysctl\] vm\.swappiness"):
        load_profile("xy")
    _site(dolmen_dirs, "xy", '[profile]\ninclude = ["x", "y"]\n[sysctl]\n"vm.swappiness" = 15\n')
    assert [e.value for e in load_profile("xy").entries] == ["15"]


def test_remove_drops_one_inherited_value_and_keeps_the_rest(dolmen_dirs: Path) -> None:
    _site(
        dolmen_dirs,
        "site",
        '[profile]\ninclude = ["ai-training"]\n'
        '[sysctl]\n"kernel.numa_balancing" = { remove = true, why = "AMD CPU-bound ETL" }\n',
    )
    p = load_profile("site")
    keys = {(e.setting, e.key) for e in p.entries}
    assert ("sysctl", "kernel.numa_balancing") not in keys
    assert ("sysctl", "vm.swappiness") in keys and ("cpu", "governor") in keys
    assert [(r.key, r.why) for r in p.removed] == [("kernel.numa_balancing", "AMD CPU-bound ETL")]
    _site(dolmen_dirs, "bad", '[sysctl]\n"vm.swappiness" = { remove = true }\n')
    with pytest.raises(ConfigError, match="nothing to remove") as err:
        load_profile("bad")
    assert err.value.line == 2


def test_site_profile_shadows_and_can_include_the_shipped_one(dolmen_dirs: Path) -> None:
    _site(
        dolmen_dirs,
        "ai-training",
        '[profile]\ndescription = "ours"\ninclude = ["ai-training"]\n'
        '[sysctl]\n"vm.swappiness" = 5\n',
    )
    p = load_profile("ai-training")
    assert p.description == "ours" and not p.shipped
    values = {(e.setting, e.key): e.value for e in p.entries}
    assert values[("sysctl", "vm.swappiness")] == "5"
    assert values[("cpu", "governor")] == "performance"  # from the shipped chain
    _site(dolmen_dirs, "explicit", '[profile]\ninclude = ["dolmen/workstation"]\n')
    assert load_profile("explicit").entries


def test_bare_dotted_keys_and_list_values(dolmen_dirs: Path) -> None:
    _site(
        dolmen_dirs,
        "dotted",
        "[sysctl]\nvm.swappiness = 10\nnet.ipv4.tcp_rmem = [4096, 87380, 268435456]\n",
    )
    values = {e.key: e.value for e in load_profile("dotted").entries}
    assert values == {"vm.swappiness": "10", "net.ipv4.tcp_rmem": "4096 87380 268435456"}


def test_parse_profile_text_is_pure() -> None:
    raw = parse_profile_text('[sysctl]\n"vm.swappiness" = { value = 10, source = "x" }\n', "t.toml")
    assert [(e.key, e.value, e.source, e.origin) for e in raw.entries] == [
        ("vm.swappiness", "10", "x", "t.toml:2")
    ]
