"""Plan, apply, verify and roll back on host trees built from the real recordings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.host.tree import TreeHost
from dolmen.tune.engine import apply_plan, require_root
from dolmen.tune.journal import State, open_journal, tune_dir
from dolmen.tune.model import Action
from dolmen.tune.planner import plan_profile
from dolmen.tune.profile import load_profile
from tests.conftest import fill_disk
from tests.report.contract import assert_valid
from tests.tune.trees import add_nvme_irqs, snapshot


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``dolmen <args>`` in-process: exit code, stdout, stderr."""
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def rows(plan_json: dict, name: str) -> list[dict]:
    return [c for c in plan_json["changes"] if c["target"]["name"] == name]


def test_plan_on_a_recorded_host_reads_never_writes(
    host_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(host_tree)
    rc, out, _ = run(capsys, "tune", "plan", "ai-training", "--root", str(host_tree), "--json")
    assert rc == 0 and snapshot(host_tree) == before
    doc = assert_valid(json.loads(out))
    assert doc["schema"] == "dolmen.tune.plan/1" and doc["reboot_needed"]
    # node_exporter's 4 CPUs, intel_pstate in powersave, per-CPU cpufreq folders
    gov = [c for c in doc["changes"] if c["target"]["key"] == "governor"]
    assert [c["target"]["name"] for c in gov] == [f"cpu{i} governor" for i in range(4)]
    assert {c["current"] for c in gov} == {"powersave"} and {c["action"] for c in gov} == {"change"}
    epp = [c for c in doc["changes"] if c["target"]["key"] == "energy_performance_preference"]
    assert epp[0]["action"] == "skip" and "energy_performance_preference" in epp[0]["reason"]
    # x86 (procfs's cpuinfo): iommu=pt is staged through a GRUB drop-in; arm64's value skips
    (iommu,) = rows(doc, "iommu=pt")
    assert iommu["action"] == "change" and iommu["effect"] == "reboot"
    assert iommu["target"]["path"] == "etc/default/grub.d/90-dolmen-iommu.cfg"
    assert "only for aarch64" in rows(doc, "iommu.passthrough")[0]["reason"]
    # /etc/sysctl.conf (read after sysctl.d through Debian's 99-sysctl.conf link) wins at boot
    (swap,) = rows(doc, "vm.swappiness")
    assert swap["current"] == "60" and any(
        "/etc/sysctl.d/99-sysctl.conf:2 (-> ../sysctl.conf) sets it to 30" in n
        for n in swap["notes"]
    )
    assert rows(doc, "persistence_mode")[0]["action"] == "skip"
    assert {c["target"]["path"] for c in doc["changes"] if c["target"]["setting"] == "boot"} == {
        "etc/sysctl.d/90-dolmen-tune.conf",
        "etc/tmpfiles.d/90-dolmen-tune.conf",
    }
    rc, out, _ = run(capsys, "tune", "ai-training", "--root", str(host_tree))
    assert rc == 0 and "ai-training on tune-test" in out and "a reboot is needed" in out


def test_apply_verify_rollback_restores_the_tree_byte_for_byte(
    host_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(host_tree)
    root = ("--root", str(host_tree))
    rc, out, _ = run(capsys, "tune", "apply", "ai-training", *root, "--yes")
    assert rc == 0, out
    assert (host_tree / "proc/sys/vm/swappiness").read_text() == "10\n"
    assert (host_tree / "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor").read_text() == (
        "performance\n"
    )
    assert "iommu=pt" in (host_tree / "etc/default/grub.d/90-dolmen-iommu.cfg").read_text()
    rc, out, _ = run(capsys, "tune", "status", *root, "--json")
    st = assert_valid(json.loads(out))
    assert st["active"] == "ai-training" and st["drift"] == []
    # staged, not booted; the modules-load.d files wait for the next boot (none is loaded here)
    assert set(st["pending"]) == {
        "init_on_alloc=0",
        "iommu=pt",
        "ib_umad loaded at boot",
        "nvidia-peermem loaded at boot",
    }
    assert run(capsys, "tune", "verify", *root)[0] == 0
    # someone else changes a value: drift, exit 1, and the rollback reports it
    (host_tree / "proc/sys/vm/swappiness").write_text("5\n")
    rc, out, _ = run(capsys, "tune", "verify", *root, "--json")
    assert rc == 1 and [
        r["target"]["name"]
        for r in assert_valid(json.loads(out))["rows"]
        if r["action"] == "change"
    ] == ["vm.swappiness"]
    rc, out, _ = run(capsys, "tune", "rollback", *root, "--yes", "--json")
    assert rc == 0
    doc = assert_valid(json.loads(out))
    assert doc["complete"] and all(r["exact"] for r in doc["restored"])
    assert [r["target"] for r in doc["restored"] if r["changed_by_others"]] == ["vm.swappiness"]
    assert snapshot(host_tree) == before
    assert run(capsys, "tune", "rollback", *root, "--yes")[1].startswith("nothing to roll back")


def test_switching_profiles_rolls_the_first_back(
    host_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(host_tree)
    root = ("--root", str(host_tree))
    rc, out, _ = run(capsys, "tune", "apply", "workstation", *root, "--yes", "--json")
    assert rc == 0 and assert_valid(json.loads(out))["ok"]
    rc, out, _ = run(capsys, "tune", "apply", "ai-inference", *root, "--yes")
    assert rc == 0 and "switching from workstation" in out
    view = open_journal(tune_dir(TreeHost(host_tree)))
    assert view is not None and view.profile == "ai-inference" and view.state is State.ACTIVE
    # huge pages: NVIDIA's 8192 x 2 MiB spread over the 3 recorded nodes
    counts = [
        (host_tree / f"sys/devices/system/node/node{n}/hugepages/hugepages-2048kB/nr_hugepages")
        .read_text()
        .strip()
        for n in range(3)
    ]
    assert counts == ["2731", "2731", "2730"]
    rc, out, _ = run(capsys, "tune", "apply", "ai-inference", *root, "--yes")
    assert rc == 0 and "nothing to change" in out
    assert run(capsys, "tune", "rollback", *root, "--yes")[0] == 0
    assert snapshot(host_tree) == before


def test_a_refused_write_stops_the_apply_and_rolls_back(host_tree: Path) -> None:
    host = TreeHost(host_tree)
    plan = plan_profile(host, load_profile("ai-training"))
    # a later step's file becomes something the host refuses to write
    victim = host_tree / "proc/sys/vm/max_map_count"
    victim.unlink()
    victim.mkdir()
    before = snapshot(host_tree)
    res = apply_plan(host, plan, tune_dir(host))
    assert not res.ok and res.error and res.error.startswith("vm.max_map_count")
    assert_valid(res.to_json())  # dolmen.tune.apply/1 with its rollback
    assert res.rollback is not None and res.rollback.complete
    assert [s.status for s in res.steps][-1] == "failed"
    assert snapshot(host_tree) == before
    assert open_journal(tune_dir(host)) is None  # closed: nothing half-applied


def test_read_only_profile_and_confirmation(
    host_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = run(capsys, "tune", "apply", "baseline", "--root", str(host_tree), "--yes")
    assert rc == 2 and "read-only reference" in err
    rc, _, err = run(capsys, "tune", "apply", "workstation", "--root", str(host_tree))
    assert rc == 2 and "--yes" in err
    rc, out, _ = run(capsys, "tune", "plan", "baseline", "--root", str(host_tree))
    assert rc == 0 and "read-only reference" in out


def test_irqs_of_a_recorded_nvme_drive_go_to_its_node(
    host_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    irqs = add_nvme_irqs(host_tree, node=1)
    before = snapshot(host_tree)
    root = ("--root", str(host_tree))
    rc, out, _ = run(capsys, "tune", "plan", "ai-training-multinode", *root, "--json")
    assert rc == 0
    doc = assert_valid(json.loads(out))
    aff = [c for c in doc["changes"] if c["target"]["key"] == "affinity"]
    assert [c["target"]["name"] for c in aff] == [f"irq {n} (nvme0)" for n in irqs]
    assert {c["target"]["desired"] for c in aff} == {"2-3"}  # node1's CPUs in the recording
    assert {c["action"] for c in aff} == {"change"}
    assert run(capsys, "tune", "apply", "ai-training-multinode", *root, "--yes")[0] == 0
    assert (host_tree / f"proc/irq/{irqs[0]}/smp_affinity_list").read_text() == "2-3\n"
    assert run(capsys, "tune", "rollback", *root, "--yes")[0] == 0
    assert snapshot(host_tree) == before


def test_bls_entries_and_runtime_dropins_come_back_exactly(
    host_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (host_tree / "etc/default/grub").unlink()
    entry = host_tree / "boot/loader/entries/abc-6.8.5.conf"
    entry.parent.mkdir(parents=True)
    entry.write_text("title Linux\nversion 6.8.5\nlinux /vmlinuz\noptions root=UUID=1 ro quiet\n")
    unit = host_tree / "usr/lib/systemd/system/containerd.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=/usr/bin/containerd\n")
    before = snapshot(host_tree)
    root = ("--root", str(host_tree))
    assert run(capsys, "tune", "apply", "ai-training", *root, "--yes")[0] == 0
    assert entry.read_text().endswith("options root=UUID=1 ro quiet init_on_alloc=0 iommu=pt\n")
    dropin = host_tree / "etc/systemd/system/containerd.service.d/90-dolmen-memlock.conf"
    assert dropin.read_text().endswith("LimitMEMLOCK=infinity\n")
    rc, out, _ = run(capsys, "tune", "verify", *root, "--json")
    # the two kernel parameters and the two modules-load.d files
    assert rc == 0 and assert_valid(json.loads(out))["counts"]["pending"] == 4
    assert run(capsys, "tune", "rollback", *root, "--yes")[0] == 0
    assert snapshot(host_tree) == before  # the folders apply created are gone too


def test_audit_unwritable_refuses_before_any_change(
    host_tree: Path, dolmen_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = host_tree.parent / "not-a-folder"
    blocker.write_text("")
    (dolmen_dirs / "dolmen.toml").write_text(f'[audit]\npath = "{blocker}/audit.log"\n')
    before = snapshot(host_tree)
    rc, _, err = run(capsys, "tune", "apply", "workstation", "--root", str(host_tree), "--yes")
    assert rc == 4, err
    assert snapshot(host_tree) == before
    assert open_journal(tune_dir(TreeHost(host_tree))) is None


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("fifo", "audit.log: it is a FIFO, not a regular file"),
        ("head-fifo", "audit.log: audit.log.head beside it is a FIFO, not a regular file"),
        ("full", "(the disk is full)"),
    ],
)
def test_an_audit_log_that_takes_no_event_is_named_not_invalid_argument(
    kind: str,
    said: str,
    host_tree: Path,
    dolmen_dirs: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A FIFO audit log (or head file) said "Invalid argument" (fdatasync) or "Illegal seek"
    (pread); a full disk the system's words. Each is named, and nothing is changed: exit 4."""
    folder = request.getfixturevalue("small_tmpfs") if kind == "full" else tmp_path
    log = folder / "audit.log"
    (dolmen_dirs / "dolmen.toml").write_text(f'[audit]\npath = "{log}"\n')
    if kind == "full":
        fill_disk(folder / "filler")
    else:
        os.mkfifo(log if kind == "fifo" else log.with_name("audit.log.head"))
    before = snapshot(host_tree)
    rc, _, err = run(capsys, "tune", "apply", "workstation", "--root", str(host_tree), "--yes")
    assert rc == 4 and said in err.splitlines()[0] and "hint: " in err, err
    assert "Invalid argument" not in err and "Illegal seek" not in err and "Traceback" not in err
    assert snapshot(host_tree) == before
    assert open_journal(tune_dir(TreeHost(host_tree))) is None


def test_a_plain_user_can_plan_but_apply_names_what_needs_root(tmp_path: Path) -> None:
    plan = plan_profile(TreeHost(tmp_path), load_profile("workstation"))
    require_root(TreeHost(tmp_path), plan)  # trees never need root
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    env = {
        **os.environ,
        # folders that do not exist: the unprivileged child writes nothing anywhere
        "DOLMEN_STATE_DIR": f"/nonexistent/dolmen-test-{os.getpid()}/state",
        "DOLMEN_CONFIG_DIR": f"/nonexistent/dolmen-test-{os.getpid()}/config",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
        "COLUMNS": "200",
    }
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*nobody, sys.executable, "-c", "pass"], capture_output=True, text=True)
    if probe.returncode != 0:  # e.g. pyenv's Python under /root (mode 700): not for nobody
        pytest.skip(f"{sys.executable} does not run unprivileged: {probe.stderr.strip()[:100]}")
    cmd = [*nobody, sys.executable, "-m", "dolmen.cli.main", "tune"]
    planned = subprocess.run(
        [*cmd, "plan", "ai-training", "--root", "/"], env=env, capture_output=True, text=True
    )
    assert planned.returncode == 0, planned.stderr
    assert "vm.swappiness" in planned.stdout and "read-only here" not in planned.stdout
    applied = subprocess.run(
        [*cmd, "apply", "workstation", "--root", "/", "--yes"],
        env=env,
        capture_output=True,
        text=True,
    )
    if "nothing to change" in applied.stdout:
        pytest.skip("this host already holds the workstation profile")
    assert applied.returncode == 3 and "needs root" in applied.stderr
    assert "/proc/sys/vm/swappiness" in applied.stderr and "sudo" in applied.stderr


def test_plan_actions_cover_every_kind(host_tree: Path) -> None:
    plan = plan_profile(TreeHost(host_tree), load_profile("ai-training-multinode"))
    assert {c.action for c in plan.changes} >= {Action.CHANGE, Action.OK, Action.SKIP}
