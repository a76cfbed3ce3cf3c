"""The pure parts of the settings: tables of real and malformed inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.tune.model import Action, ApplyFailed, Change, Effect, Reading, Target
from dolmen.tune.settings import SETTINGS
from dolmen.tune.settings.base import Entry
from dolmen.tune.settings.boot import boot_targets
from dolmen.tune.settings.cmdline import IN_EFFECT, PENDING, arg_text, options_line, with_option
from dolmen.tune.settings.hugepages import size_kb, spread
from dolmen.tune.settings.kernel_file import KernelFileSetting
from dolmen.tune.settings.limits import limits_conf, unit_dropin
from dolmen.tune.settings.sysctl import sysctl_path
from dolmen.tune.settings.sysfs import choices, selected
from dolmen.tune.sysctld import Assignment, normalize_key, override_note, parse_sysctl_conf
from tests.conftest import make_tree


def _t(setting: str, desired: str, key: str = "k") -> Target:
    return Target(setting, key, key, desired)


@pytest.mark.parametrize(
    ("current", "desired", "action"),
    [
        ("4096\t131072\t33554432", "4096 131072 33554432", Action.OK),  # kernel prints tabs
        ("4096\t131072\t6291456", "4096 87380 268435456", Action.CHANGE),
        ("60", "10", Action.CHANGE),
        ("10", "10", Action.OK),
    ],
)
def test_sysctl_plan_compares_whitespace_insensitively(
    current: str, desired: str, action: Action
) -> None:
    assert SETTINGS["sysctl"].plan(_t("sysctl", desired), Reading(current)).action is action


def test_plan_skips_with_the_reason_and_keeps_read_only_values_that_match() -> None:
    s = SETTINGS["sysctl"]
    skipped = s.plan(_t("sysctl", "1"), Reading(None, skip="not on this host"))
    assert skipped.action is Action.SKIP and skipped.reason == "not on this host"
    held = s.plan(_t("sysctl", "1"), Reading("1", skip="read-only here"))
    assert held.action is Action.OK


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("vm.swappiness", "proc/sys/vm/swappiness"),
        ("net.ipv4.conf.all.arp_ignore", "proc/sys/net/ipv4/conf/all/arp_ignore"),
        ("net/ipv4/conf/eth0.100/rp_filter", "proc/sys/net/ipv4/conf/eth0.100/rp_filter"),
    ],
)
def test_sysctl_paths(name: str, path: str) -> None:
    assert sysctl_path(name) == path


@pytest.mark.parametrize(
    ("text", "chosen", "listed"),
    [
        ("always [madvise] never\n", "madvise", ("always", "madvise", "never")),
        ("[mq-deadline] kyber bfq none\n", "mq-deadline", ("mq-deadline", "kyber", "bfq", "none")),
        ("128\n", "128", None),
        ("", "", None),
    ],
)
def test_bracketed_choice_files(text: str, chosen: str, listed: tuple[str, ...] | None) -> None:
    assert selected(text) == chosen
    assert choices(text) == listed


def test_sysfs_restores_the_word_when_the_kernel_refuses_its_display_form() -> None:
    s = SETTINGS["sysfs"]
    assert s.kernel_form(b"always [madvise] never\n") == b"madvise\n"
    assert s.kernel_form(b"128\n") is None


THP = "sys/kernel/mm/transparent_hugepage/enabled"


def test_every_kind_that_writes_one_kernel_value_shares_the_base() -> None:
    kinds = {name for name, s in SETTINGS.items() if isinstance(s, KernelFileSetting)}
    assert kinds == {"sysctl", "sysfs", "cpu", "hugepages", "irq", "pcie_power"}


def test_a_kernel_file_reads_once_refuses_with_the_reason_and_writes_a_line(
    tmp_path: Path,
) -> None:
    tree = make_tree(tmp_path, files={THP: "always [madvise] never\n", "proc/sys/vm/x": "1\n"})
    host, s = TreeHost(tree), SETTINGS["sysfs"]
    t = Target("sysfs", THP[4:], THP[4:], "never", THP)
    assert s.read(host, t) == Reading("madvise")
    s.apply(host, Change(t, "madvise", Action.CHANGE))
    assert (tree / THP).read_text() == "never\n"
    assert s.boot_line(t) == ("tmpfiles", f"w /{THP} - - - - never")
    (tree / THP).write_text("always madvise [never]\n")  # a tree keeps what was written
    offered = s.read(host, Target("sysfs", "k", "k", "sometimes", THP))
    assert offered == Reading(
        "never", skip="'sometimes' is not offered here; valid: always, madvise, never"
    )
    absent = s.read(host, Target("sysfs", "k", "k", "1", "sys/nope"))
    assert absent == Reading(None, skip="not on this host (no such kernel setting)")
    (tree / "proc/sys/vm/x").chmod(0o444)
    if not host.writable("proc/sys/vm/x"):  # root writes anyway: nothing to see then
        locked = SETTINGS["sysctl"].read(
            host, Target("sysctl", "vm.x", "vm.x", "2", "proc/sys/vm/x")
        )
        assert locked == Reading("1", skip="read-only here (the kernel refuses writes to it)")
    assert (
        SETTINGS["irq"].boot_line(Target("irq", "affinity", "irq 1", "0-3", "proc/irq/1/x")) is None
    )


def test_irq_compares_cpu_sets() -> None:
    s = SETTINGS["irq"]
    assert s.same("0-3", "0,1,2,3") and not s.same("0-3", "4-7")


@pytest.mark.parametrize(
    ("raw", "kb"),
    [("2048kB", 2048), ("2M", 2048), ("2MB", 2048), ("1G", 1048576), ("1GB", 1048576)],
)
def test_huge_page_sizes(raw: str, kb: int) -> None:
    assert size_kb(raw) == kb


def test_huge_page_sizes_malformed() -> None:
    for bad in ("", "2", "2T", "x2M", "-2M"):
        with pytest.raises(ValueError, match="valid forms"):
            size_kb(bad)


def test_spread_over_nodes() -> None:
    assert spread(8192, 3) == [2731, 2731, 2730]
    assert spread(1, 2) == [1, 0] and spread(0, 4) == [0, 0, 0, 0]


BLS = (
    "title Fedora Linux (6.8.5-301.fc40.x86_64) 40 (Workstation Edition)\n"
    "version 6.8.5-301.fc40.x86_64\n"
    "linux /vmlinuz-6.8.5-301.fc40.x86_64\n"
    "initrd /initramfs-6.8.5-301.fc40.x86_64.img\n"
    "options root=UUID=1234 ro rhgb quiet iommu=on\n"
    "grub_users $grub_users\n"
)


def test_bls_options_are_edited_in_place() -> None:
    out = with_option(BLS, "iommu=pt")
    assert options_line(out) == (4, ["root=UUID=1234", "ro", "rhgb", "quiet", "iommu=pt"])
    assert out.replace("iommu=pt", "iommu=on") == BLS  # one token changed, nothing else
    assert with_option(out, "iommu=pt") == out
    assert with_option("title x\n", "nosmt") == "title x\noptions nosmt\n"
    assert options_line("garbage\x00\n") is None


def test_cmdline_states_plan() -> None:
    s = SETTINGS["cmdline"]
    t = _t("cmdline", "iommu=pt")
    assert s.plan(t, Reading(IN_EFFECT)).action is Action.OK
    assert s.plan(t, Reading(PENDING)).action is Action.PENDING
    change = s.plan(t, Reading("absent"))
    assert change.action is Action.CHANGE and change.effect is Effect.REBOOT
    assert arg_text("nosmt", "true") == "nosmt" and arg_text("iommu", "pt") == "iommu=pt"


def test_cmdline_in_effect_without_a_boot_loader_configuration(tmp_path: Path) -> None:
    """A bundle (or a PXE/UKI boot) with no /etc/default/grub and no BLS entries: a parameter
    the running kernel has is in effect, never "absent, add it by hand" (issue 17)."""
    cmdline = "BOOT_IMAGE=/vmlinuz ro iommu=pt init_on_alloc=0\n"
    host = TreeHost(make_tree(tmp_path, files={"proc/cmdline": cmdline}))
    s = SETTINGS["cmdline"]
    [target] = s.targets(host, Entry("cmdline", "iommu", "pt", "test", ""))
    change = s.plan(target, s.read(host, target))
    assert (change.current, change.action) == (IN_EFFECT, Action.OK)
    missing = s.targets(host, Entry("cmdline", "nosmt", "true", "test", ""))
    assert isinstance(missing, str) and "add nosmt to the boot loader by hand" in missing
    with pytest.raises(ApplyFailed, match="no boot loader configuration"):
        s.apply(host, change)


def test_limits_files() -> None:
    conf = limits_conf("memlock", "unlimited")
    assert "*      soft  memlock  unlimited" in conf and "root   hard  memlock  unlimited" in conf
    assert "stack    65536" in limits_conf("stack", str(64 * 1024 * 1024))  # KiB in limits.conf
    assert unit_dropin("stack", str(64 * 1024 * 1024)).endswith("[Service]\nLimitSTACK=67108864\n")
    assert unit_dropin("memlock", "unlimited").endswith("LimitMEMLOCK=infinity\n")


def test_services_plan() -> None:
    s = SETTINGS["services"]
    t = Target("services", "irqbalance.service", "irqbalance.service", "disabled")
    assert s.plan(t, Reading("enabled, active")).action is Action.CHANGE
    assert s.plan(t, Reading("disabled, inactive")).action is Action.OK
    assert s.plan(t, Reading("disabled, active")).action is Action.CHANGE  # still running
    assert s.plan(t, Reading("static, activity unknown")).action is Action.OK
    masked = Target("services", "x.service", "x.service", "masked")
    assert s.plan(masked, Reading("disabled, inactive")).action is Action.CHANGE


SYSCTL_D = """\
# comment
; also a comment
vm.swappiness = 30
-net.ipv4.conf.all.rp_filter=2
net/core/somaxconn = 1024
kernel.sysrq
  fs.file-max   =   100000
"""


def test_parse_sysctl_conf() -> None:
    got = parse_sysctl_conf(SYSCTL_D, "etc/sysctl.d/x.conf")
    assert [(a.key, a.value, a.line) for a in got] == [
        ("vm.swappiness", "30", 3),
        ("net.ipv4.conf.all.rp_filter", "2", 4),
        ("net.core.somaxconn", "1024", 5),
        ("fs.file-max", "100000", 7),
    ]
    assert parse_sysctl_conf("\x00\xff junk", "x") == []
    assert normalize_key("-net/ipv4/ip_forward") == "net.ipv4.ip_forward"


def test_override_notes_name_the_file_that_wins_at_boot() -> None:
    ours = "etc/sysctl.d/90-dolmen-tune.conf"
    early = Assignment("vm.swappiness", "60", "usr/lib/sysctl.d/10-x.conf", 1)
    late = Assignment("vm.swappiness", "30", "etc/sysctl.d/99-sysctl.conf", 3)
    conf = Assignment("vm.swappiness", "30", "etc/sysctl.conf", 2)
    assert override_note([early], "vm.swappiness", "10", ours) is None
    note = override_note([early, late], "vm.swappiness", "10", ours)
    assert note and "/etc/sysctl.d/99-sysctl.conf:3 sets it to 30" in note
    assert "/etc/sysctl.conf:2" in (override_note([conf], "vm.swappiness", "10", ours) or "")
    assert override_note([late], "vm.swappiness", "30", ours) is None  # same value: fine
    assert "not persisted" in (override_note([], "vm.swappiness", "10", None) or "")


def test_boot_targets_collect_lines_of_settings_that_apply() -> None:
    sysctl = Change(Target("sysctl", "vm.swappiness", "vm.swappiness", "10"), "60", Action.CHANGE)
    thp_path = "sys/kernel/mm/transparent_hugepage/enabled"
    thp = Change(Target("sysfs", "k", "k", "never", thp_path), "madvise", Action.OK)
    skipped = Change(Target("sysctl", "a.b", "a.b", "1"), None, Action.SKIP, reason="absent")
    got = boot_targets("p", [sysctl, thp, skipped], lambda t: SETTINGS[t.setting].boot_line(t))
    by = {t.key: t.desired for t in got}
    assert by["sysctl"].endswith("# profile: p\nvm.swappiness = 10\n")
    assert by["tmpfiles"].endswith(f"w /{thp_path} - - - - never\n")
