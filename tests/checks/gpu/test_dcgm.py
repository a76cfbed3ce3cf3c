"""gpu.dcgm_diag: a recorded diagnostic judged as DCGM judged it, on the right GPU."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.checks.gpu.trees import by_subject, run, tree, xml
from tests.conftest import make_tree
from tests.facts.test_dcgm import NEW, OLD


def _with_diag(root: Path, doc: object, **kw: object) -> Path:
    made = tree(root, **kw)  # type: ignore[arg-type]
    (made / "commands" / "dcgmi%20diag%20-j").write_text(json.dumps(doc))
    return made


def test_failed_test_fails_on_its_gpu_by_serial(tmp_path: Path) -> None:
    # The H100 recording's GPU 1 has serial S1 once we say so: DCGM 4 names serials.
    text = xml()
    serials = re.findall(r"<serial>([^<]*)</serial>", text)
    doc = json.loads(json.dumps(NEW))
    for entity, serial in zip(doc["entity_groups"][0]["entities"], serials, strict=False):
        entity["serial_num"] = serial
    found = by_subject(run(_with_diag(tmp_path, doc, nvsmi=text, pci={}), "gpu.dcgm_diag"))
    fails = [f for f in found.values() if f.status.value == "fail"]
    assert len(fails) == 1 and "GPU 1 DBE" in fails[0].summary
    assert fails[0].subject.startswith("gpu:0000") and fails[0].evidence["error_ids"] == [43]
    assert sum(f.status.value == "pass" for f in found.values()) == 1


def test_without_inventory_subjects_are_dcgm_indices(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "t", commands={"dcgmi diag -j": json.dumps(OLD)})
    found = by_subject(run(root, "gpu.dcgm_diag"))
    assert {s: f.status.value for s, f in found.items()} == {
        "gpu:0": "pass",
        "gpu:1": "pass",
        "gpu:2": "warn",
        "gpu:3": "pass",  # Blacklist passed, PCIe skipped: passed what ran
    }
    assert "PCIe replay rate high" in found["gpu:2"].summary


def test_no_diag_is_a_skip_never_a_pass(tmp_path: Path) -> None:
    (f,) = run(tree(tmp_path, pci={}), "gpu.dcgm_diag")
    assert f.status.value == "skip" and "dcgmi diag -j" in f.summary


def test_unreadable_or_failed_run_is_unknown(tmp_path: Path) -> None:
    bad = make_tree(tmp_path / "b", commands={"dcgmi diag -j": '{"DCGM Diagnostic": {"test_'})
    (f,) = run(bad, "gpu.dcgm_diag")
    assert f.status.value == "unknown" and "malformed" in f.summary
    doc = {"DCGM Diagnostic": {"runtime_error": "No GPUs found"}}
    rt = make_tree(tmp_path / "r", commands={"dcgmi diag -j": json.dumps(doc)})
    (g,) = run(rt, "gpu.dcgm_diag")
    assert g.status.value == "unknown" and "No GPUs found" in g.summary


def test_a_cut_table_that_passed_what_it_shows_is_unknown_naming_the_cut(tmp_path: Path) -> None:
    cut = (
        "Successfully ran diagnostic for group.\n"
        "| Diagnostic                | Result                                         |\n"
        "|-----  Deployment  --------+------------------------------------------------|\n"
        "| Denylist                  | Pass                                           |\n"
        "| NVML Library              | Pass                                           |\n"
        "| PCIe                      | Pa"
    )
    (f,) = run(make_tree(tmp_path / "c", commands={"dcgmi diag -r 3": cut}), "gpu.dcgm_diag")
    assert f.status.value == "unknown" and "passed the 2 tests read" in f.summary
    assert "cut off" in f.summary


def test_a_live_host_says_where_its_diagnostic_is_at_each_level() -> None:
    """The live host holds no recorded diagnostic; the skip once said "use the full tier"
    during a full run too. Standard: the full tier runs one; full: its own workload does."""
    from dolmen.checks import load_registry
    from dolmen.checks.context import Context
    from dolmen.checks.runner import run_one
    from dolmen.host.live import LiveHost
    from dolmen.workloads.session import Workloads

    spec = load_registry()["gpu.dcgm_diag"]
    host = LiveHost()
    (standard,) = run_one(Context(host), spec)
    assert standard.status.value == "skip"
    assert standard.summary == (
        "no DCGM diagnostic: not supported on a live host (no recorded diagnostic to read); "
        "dolmen validate --level full runs dcgmi diag (workload.dcgm_diag)"
    )
    (full,) = run_one(Context(host, workloads=Workloads(host, device="cpu", smoke=True)), spec)
    assert full.status.value == "skip" and "--level full" not in full.summary
    assert full.summary.endswith(
        "; workload.dcgm_diag reports the one this full run starts, or why none runs"
    )
