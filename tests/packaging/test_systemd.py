"""The systemd units of packaging/systemd: what each runs, checked by systemd itself.

``systemd-analyze verify`` works without systemd as PID 1 (these machines have none): it
loads the units into a manager of its own under ``--root``, a temporary tree holding a copy
of the distribution's units (the targets ours order against), our units and stand-ins for
the programs they run. It reports unknown keys and bad values as warnings with exit 0, so
the test fails on any line naming our files; a negative control shows it would."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dolmen.values.duration import parse_duration
from tests.packaging.common import PACKAGING
from tests.packaging.units import load_unit, one, parse_unit

SYSTEMD = PACKAGING / "systemd"
UNITS = sorted(p.name for p in SYSTEMD.glob("*.service")) + sorted(
    p.name for p in SYSTEMD.glob("*.timer")
)
ANALYZE = shutil.which("systemd-analyze")
DIST_UNITS = Path("/usr/lib/systemd/system")
needs_analyze = pytest.mark.skipif(
    ANALYZE is None or not DIST_UNITS.is_dir(),
    reason="systemd-analyze or /usr/lib/systemd/system is absent (Debian: systemd)",
)


def test_the_four_units_are_shipped() -> None:
    assert UNITS == [
        "dolmen-agent.service",
        "dolmen-tune-boot.service",
        "dolmen-validate.service",
        "dolmen-validate.timer",
    ]


def test_agent_runs_dolmen_serve_with_its_state_folder() -> None:
    u = load_unit(SYSTEMD / "dolmen-agent.service")
    argv = one(u, "Service", "ExecStart").split()
    assert argv[:2] == ["/opt/dolmen/bin/dolmen", "serve"]
    # No --listen: [serve] listen of dolmen.toml decides, and its default is loopback.
    assert "--listen" not in argv
    assert argv[argv.index("--state") + 1] == "/var/lib/dolmen"
    assert one(u, "Service", "StateDirectory") == "dolmen"
    assert "DOLMEN_STATE_DIR=/var/lib/dolmen" in u["Service"]["Environment"]
    assert one(u, "Service", "Restart") == "on-failure"
    assert one(u, "Install", "WantedBy") == "multi-user.target"


def test_agent_is_hardened_but_keeps_what_it_reads() -> None:
    svc = load_unit(SYSTEMD / "dolmen-agent.service")["Service"]
    assert svc["ProtectSystem"] == ["strict"] and svc["NoNewPrivileges"] == ["yes"]
    # NVML needs /dev/nvidia*, Xids come from the kernel log, ctypes needs W+X pages.
    for open_on_purpose in ("PrivateDevices", "ProtectKernelLogs", "MemoryDenyWriteExecute"):
        assert open_on_purpose not in svc, open_on_purpose
    assert "CAP_SYSLOG" in svc["CapabilityBoundingSet"][0]


def test_standard_tier_writes_the_textfile_it_may_write() -> None:
    u = load_unit(SYSTEMD / "dolmen-validate.service")
    argv = one(u, "Service", "ExecStart").split()
    assert argv[:2] == ["/opt/dolmen/bin/dolmen", "validate"]
    assert argv[argv.index("--level") + 1] == "standard"
    out = Path(argv[argv.index("--prometheus") + 1])
    assert out.suffix == ".prom"  # what the textfile collector reads; dolmen's temporary is not
    assert str(out.parent) in u["Service"]["ReadWritePaths"]
    assert one(u, "Unit", "ConditionPathIsDirectory") == str(out.parent)
    # unhealthy (1) and undecided (2) are verdicts, not failures of the unit
    assert one(u, "Service", "SuccessExitStatus").split() == ["1", "2"]
    budget = parse_duration(argv[argv.index("--timeout") + 1])
    assert budget < parse_duration(one(u, "Service", "TimeoutStartSec").replace("min", "m"))
    timer = load_unit(SYSTEMD / "dolmen-validate.timer")
    assert "Unit" not in timer["Timer"]  # it starts the service of its own name
    assert one(timer, "Install", "WantedBy") == "timers.target"


def test_tune_boot_reapplies_before_irqbalance() -> None:
    u = load_unit(SYSTEMD / "dolmen-tune-boot.service")
    assert one(u, "Service", "ExecStart") == "/opt/dolmen/bin/dolmen tune reapply --yes"
    assert one(u, "Service", "Type") == "oneshot"
    assert "irqbalance.service" in one(u, "Unit", "Before").split()
    assert "systemd-sysctl.service" in one(u, "Unit", "After").split()


def test_unit_reader_handles_what_systemd_accepts() -> None:
    u = parse_unit("[Unit]\n# c\nAfter=a\nAfter=b \\\n  c\n\n[Service]\nExecStart=/x y=z\n")
    assert u == {"Unit": {"After": ["a", "b c"]}, "Service": {"ExecStart": ["/x y=z"]}}
    with pytest.raises(ValueError, match="line 1"):
        parse_unit("Key=outside\n")


def _root(tmp_path: Path, units: dict[str, str]) -> Path:
    """A root for --root: the distribution's units, ours, and executable stand-ins."""
    root = tmp_path / "root"
    shutil.copytree(DIST_UNITS, root / "usr/lib/systemd/system", symlinks=True)
    etc = root / "etc/systemd/system"
    etc.mkdir(parents=True)
    for name, text in units.items():
        (etc / name).write_text(text)
    prog = root / "opt/dolmen/bin/dolmen"
    prog.parent.mkdir(parents=True)
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    return root


def _verify(root: Path, names: list[str]) -> tuple[int, list[str]]:
    assert ANALYZE is not None
    done = subprocess.run(
        [ANALYZE, "verify", f"--root={root}", *names], capture_output=True, text=True, timeout=60
    )
    ours = [
        line
        for line in (done.stdout + done.stderr).splitlines()
        if re.search(r"dolmen-[\w-]+\.(service|timer)", line)
    ]
    return done.returncode, ours


@needs_analyze
def test_systemd_analyze_verify_accepts_every_unit(tmp_path: Path) -> None:
    units = {name: (SYSTEMD / name).read_text() for name in UNITS}
    rc, said = _verify(_root(tmp_path, units), UNITS)
    assert rc == 0 and said == [], said


@needs_analyze
def test_verify_would_catch_a_bad_key_or_value(tmp_path: Path) -> None:
    """The negative control: a misspelt key and a bad value are seen, named by file."""
    text = (SYSTEMD / "dolmen-agent.service").read_text()
    bad = text.replace("ProtectSystem=strict", "ProtectSystem=sometimes").replace(
        "ProtectHome=yes", "ProtectHomes=yes"
    )
    _, said = _verify(_root(tmp_path, {"dolmen-agent.service": bad}), ["dolmen-agent.service"])
    assert any("protect system value" in line for line in said), said
    assert any("Unknown key 'ProtectHomes'" in line for line in said), said


@needs_analyze
@pytest.mark.parametrize(
    ("unit", "limit"),
    [("dolmen-agent.service", 4.0), ("dolmen-validate.service", 4.0)],
)
def test_exposure_of_the_read_only_units(tmp_path: Path, unit: str, limit: float) -> None:
    """systemd's own hardening score, offline (0 best, 10 worst). dolmen-tune-boot is left
    out on purpose: it writes /proc/sys, /sys and /etc as root (it scores 8, "exposed")."""
    assert ANALYZE is not None
    root = _root(tmp_path, {unit: (SYSTEMD / unit).read_text()})
    done = subprocess.run(
        [ANALYZE, "security", "--offline=true", f"--root={root}", unit],
        capture_output=True,
        text=True,
        timeout=60,
    )
    m = re.search(r"Overall exposure level for \S+: ([\d.]+)", done.stdout)
    assert m is not None, done.stdout + done.stderr
    assert float(m.group(1)) <= limit
