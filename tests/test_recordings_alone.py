"""Every real recording of ../shared/recordings, alone, must make ``validate`` tell the truth
(issue 8): a healthy file draws no failure, the fault a file shows is flagged on the device
it names, and what the bundle does not hold is unknown or skipped in those words, never
passed and never failed. A one-file bundle is never HEALTHY.

The table is tests/recordings/cases_*.py (one case per file, block or folder, its
conclusion written from the file and PROVENANCE.md); tests/recordings/today.py marks the
cases whose conclusion validate does not reach yet, with the issue-8 item that owns each
(strict: a case that starts passing fails until its mark is removed: ``python -m
tests.recordings.regenerate`` rewrites the marks from a ``--runxfail`` run).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from dolmen.checks.model import REGISTRY, Level
from dolmen.checks.suite import validate
from dolmen.checks.verdict import Health, Verdict
from dolmen.config import Config
from dolmen.host import Host, open_host
from tests.conftest import RECORDINGS
from tests.recordings import bundle, cases_fabric, cases_host, cases_logs, cases_nvsmi, today
from tests.recordings.model import BAD, FAIL, Case, Flag

ANY = frozenset({"pass", "warn", "fail", "skip"})

CASES: list[Case] = cases_nvsmi.CASES + cases_logs.CASES + cases_fabric.CASES + cases_host.CASES
_VERDICTS: dict[str, tuple[Path, Verdict]] = {}


def params(test: str, cases: Iterable[Case]) -> list[object]:
    marks = today.XFAIL.get(test, {})
    return [
        pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=marks[c.id])])
        if c.id in marks
        else pytest.param(c, id=c.id)
        for c in cases
    ]


def judge(host: Host) -> Verdict:
    with host:
        return validate(host, level=Level.STANDARD, config=Config())


def judged_bundle(case: Case, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Verdict]:
    """The case's one-file bundle and its verdict (computed once per session)."""
    if case.id not in _VERDICTS:
        root = bundle.build(case, tmp_path_factory.mktemp("bundle") / "tree")
        _VERDICTS[case.id] = (root, judge(open_host(root)))
    return _VERDICTS[case.id]


def under_key(case: Case, tmp_path_factory: pytest.TempPathFactory) -> Verdict:
    return judged_bundle(case, tmp_path_factory)[1]


def shown(verdict: Verdict, statuses: Iterable[str] = ("fail", "warn", "unknown")) -> list[str]:
    keep = set(statuses)
    return [
        f"{f.status.value} {f.check} {f.subject}: {f.summary}"
        for f in verdict.findings
        if f.status.value in keep
    ]


def assert_conclusion(case: Case, verdict: Verdict) -> None:
    """The case's conclusion (tests/recordings/model.py) holds on ``verdict``."""
    findings = verdict.findings
    assert not [f for f in findings if f.status.value == "error"], shown(verdict, ["error"])
    assert verdict.health is not Health.HEALTHY, "a one-file bundle read as a healthy host"
    failures = [f for f in findings if f.status.value == "fail"]
    if case.kind != "fault":
        assert not failures, (case.why, shown(verdict, ["fail"]))
    else:
        named = [fl for fl in case.expect if fl.status & FAIL]
        wrong = [f for f in failures if not any(fl.matches_subject(f) for fl in named)]
        assert not wrong, ("a failure on a subject the file does not fault", shown(verdict))
    missing = [str(fl) for fl in case.expect if not any(fl.matches(f) for f in findings)]
    assert not missing, (case.why, missing, shown(verdict, ["fail", "warn", "unknown", "pass"]))
    present = [str(fl) for fl in case.forbid if any(fl.matches(f) for f in findings)]
    assert not present, (case.why, present)


@pytest.mark.parametrize("case", params("under_key", CASES))
def test_under_key(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert_conclusion(case, under_key(case, tmp_path_factory))


@pytest.mark.parametrize("case", params("bare", [c for c in CASES if c.single_file]))
def test_bare_from_file(case: Case, tmp_path: Path) -> None:
    """The same conclusion from ``--from FILE`` (single-file detection picks the key)."""
    path = bundle.bare_file(case, tmp_path / "paste")
    assert_conclusion(case, judge(open_host(path)))


@pytest.mark.parametrize("case", params("driver_loaded", [c for c in CASES if c.answered]))
def test_driver_loaded(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    """nvidia-smi answered in this file: the driver is loaded, whatever else is absent, and
    nothing may call it unloaded (stack.driver.loaded, security.module_signing)."""
    verdict = under_key(case, tmp_path_factory)
    loaded = [f for f in verdict.findings if f.check == "stack.driver.loaded"]
    assert [f.status.value for f in loaded] == ["pass"], shown(verdict)
    signing = [f for f in verdict.findings if f.check == "security.module_signing"]
    assert not [f for f in signing if f.status.value == "fail"], shown(verdict, ["fail"])


def invented(case: Case, root: Path) -> list[tuple[Flag, str]]:
    """Findings no check may draw from the bundle at ``root``: each needs a source it lacks."""
    rules: list[tuple[Flag, str]] = [
        (Flag("stack.libraries.broken_links", frozenset({"pass"})), "the library files"),
        (Flag("stack.nvcc", frozenset({"pass"})), "the toolkits and the driver"),
        (Flag("interconnect.ib.errors", BAD, words="uptime unknown"), "the uptime"),
    ]
    if not (root / "etc/cdi").exists():
        rules.append((Flag("stack.container.cdi", BAD), "podman, the toolkit's mode, etc/cdi"))
        no_spec = Flag("stack.container.cdi", ANY, words="no NVIDIA CDI spec")
        rules.append((no_spec, "etc/cdi"))
    if not (root / "etc/ld.so.cache").exists() and not case.key.startswith("commands/ldconfig"):
        no_libs = Flag("stack.libraries.consistent", ANY, words="installed")
        rules.append((no_libs, "the linker cache or the headers"))
    if not (root / "sys/kernel/mm").exists() and not (root / "proc/meminfo").exists():
        rules.append((Flag("tuning.hugepages", frozenset({"pass"})), "sys/kernel/mm, meminfo"))
    if case.rel.startswith("fabric-manager/"):  # nv-fabricmanager's log: no kernel record
        for check in ("system.*", "storage.io_errors", "interconnect.ib.flaps", "gpu.xid"):
            rules.append((Flag(check, frozenset({"pass"})), "the kernel log"))
    if not (root / "sys/devices/system/node").exists():  # "one NUMA node:", "no NUMA node(s):"
        nodes = Flag("tuning.*", ANY, words=r"NUMA node(\(s\))?:")
        rules.append((nodes, "sys/devices/system/node"))
    if not (root / "sys/class/net").exists():
        netdev = Flag("interconnect.roce", frozenset({"pass", "fail"}), words="netdev")
        rules.append((netdev, "sys/class/net"))
    if not (root / "sys/bus/pci").exists():
        rules.append((Flag("system.pcie.aer", frozenset({"pass"}), words="AER counters"), "sysfs"))
        if not case.key.startswith("commands/lspci"):
            no_link = Flag("system.pcie.downgraded", ANY, words="no non-GPU PCIe link")
            rules.append((no_link, "the PCI bus"))
            no_nic = Flag("interconnect.nic.pcie_limited", frozenset({"pass"}), words="PCI bus")
            rules.append((no_nic, "the PCI bus"))
    return rules


@pytest.mark.parametrize("case", params("nothing_invented", CASES))
def test_nothing_invented(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No pass, warning or failure drawn from a source the bundle does not hold, nor a skip
    that states what that source would show (how many NUMA nodes, ...)."""
    root, verdict = judged_bundle(case, tmp_path_factory)
    found = [
        f"{f.status.value} {f.check} {f.subject}: {f.summary} (needs {needs})"
        for flag, needs in invented(case, root)
        for f in verdict.findings
        if flag.matches(f)
    ]
    assert not found


# A skip or unknown that states absence on the host ("no GPU on this host", "missing: ...")
# where the bundle simply did not hold the source: it must say "not in this bundle".
_ABSENCE = re.compile(
    r"on this host|\bmissing\b|none on the PCI bus|not loaded|not in sysfs|no NVMe controller"
)


@pytest.mark.parametrize("case", params("absence_named", CASES))
def test_absence_named(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    verdict = under_key(case, tmp_path_factory)
    found = [
        f"{f.status.value} {f.check} {f.subject}: {f.summary}"
        for f in verdict.findings
        if f.status.value in ("skip", "unknown") and _ABSENCE.search(f.summary)
    ]
    assert not found


@pytest.mark.parametrize("case", params("remedy_adds", CASES))
def test_unbundled_remedy_adds(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    """An unknown because the bundle lacked its source says what to add, never the fix of
    a fault nobody found (gpu.present's expected_gpus = 0, system.memory's BMC advice)."""
    verdict = under_key(case, tmp_path_factory)
    found = [
        f"{f.check} {f.subject}: {f.summary} -> {f.remedy}"
        for f in verdict.findings
        if f.status.value == "unknown"
        and "in this bundle" in f.summary  # "not in this bundle: X", "no GPU source in this ..."
        and f.remedy == REGISTRY[f.check].remedy
    ]
    assert not found


def test_pasted_sys_class_infiniband_folder() -> None:
    """A real /sys/class/infiniband copy given to --from is that part of a partial tree (it
    was refused as 'not a host tree'): its ports are read, the rest is not in this bundle."""
    folder = RECORDINGS / "sysfs/gpud__sys-class-infiniband-h100.0"
    if not folder.is_dir():
        pytest.skip(f"real recordings not available: {folder} is absent")
    host = open_host(folder)
    assert host.kind == "paste" and host.exists("sys/class/infiniband/mlx5_0/ports/1/state")
    verdict = judge(host)
    active = [f for f in verdict.findings if f.check == "interconnect.ib.port_state"]
    assert len([f for f in active if f.status.value == "pass"]) == 8, shown(verdict)  # 8 NDR
    [nic] = [f for f in verdict.findings if f.check == "interconnect.nic.pcie_limited"]
    assert nic.status.value == "unknown" and "their PCI functions" in nic.summary


def test_every_recording_has_a_case() -> None:
    """A file added to ../shared/recordings needs a case (or a reason to be left out)."""
    if not RECORDINGS.is_dir():
        pytest.skip(f"real recordings not available: {RECORDINGS} is absent")
    covered = {c.rel for c in CASES}
    folders = tuple(c.rel + "/" for c in CASES if c.build == "tree")
    left = [
        rel
        for rel in bundle.every_file()
        if rel not in covered and rel not in cases_host.EXCLUDED and not rel.startswith(folders)
    ]
    assert not left


def test_every_excerpt_block_has_a_case() -> None:
    """Each ``## <url>`` block of an excerpt compilation is a case or left out with a reason."""
    if not RECORDINGS.is_dir():
        pytest.skip(f"real recordings not available: {RECORDINGS} is absent")
    taken = {c.block for c in CASES if c.block and c.block.startswith("https://")}
    left = []
    for rel in {c.rel for c in CASES if c.rel.endswith(".md")}:
        for line in (RECORDINGS / rel).read_text().splitlines():
            if line.startswith("## https://"):
                url = line[3:].split()[0]
                if url not in taken and url not in cases_host.EXCLUDED_BLOCKS:
                    left.append(f"{rel}: {url}")
    assert not left


def test_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
