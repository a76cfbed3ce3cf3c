"""The verdict's coverage (issue 8): what was read, what was not in the bundle, what could
not be read, from the facts' own reasons; and what the verdict line says of it."""

from __future__ import annotations

import json
from pathlib import Path

from dolmen.checks.model import Level, Status
from dolmen.checks.suite import validate
from dolmen.config import Config
from dolmen.host import open_host
from dolmen.report.json import verdict_document
from dolmen.report.reason import one_line_reason
from tests.conftest import make_tree, recording

XML = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"


def _verdict(root: Path, config: Config | None = None):  # type: ignore[no-untyped-def]
    with open_host(root) as host:
        return validate(host, level=Level.QUICK, config=config)


def test_empty_bundle_covers_nothing(tmp_path: Path) -> None:
    v = _verdict(make_tree(tmp_path))
    assert v.coverage["PCI tree"] == {
        "state": "not in this bundle",
        "reason": "not in this bundle: sys/bus/pci/devices",
    }
    assert v.coverage["kernel log"]["state"] == "not in this bundle"
    assert v.partial is not None and v.partial.startswith("partial bundle: read nothing; ")
    assert v.gpu_note is not None and v.gpu_note.startswith("no GPU source in this bundle")
    assert v.health.value == "undecided"
    doc = verdict_document(v)
    assert doc["coverage"] == json.loads(json.dumps(v.coverage))
    line = one_line_reason(v, max_len=400)
    assert line.startswith("dolmen: undecided") and "no GPU source in this bundle" in line
    assert "partial bundle" in line


def test_xml_alone_is_partial_and_the_driver_is_loaded(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"nvidia-smi -q -x": recording(XML).read_text()})
    (root / "dolmen-snapshot.json").write_text('{"partial": true}')
    v = _verdict(root)
    assert v.coverage["GPU driver inventory"] == {"state": "read"}
    assert v.coverage["kernel modules"]["state"] == "not in this bundle"
    loaded = [f for f in v.findings if f.check == "stack.driver.loaded"]
    assert [f.status for f in loaded] == [Status.PASS]
    assert "answered for 8 GPU(s)" in loaded[0].summary
    assert not [f for f in v.findings if f.status is Status.FAIL]
    assert v.partial is not None and "read GPU driver inventory" in v.partial


def test_cpu_only_needs_the_site_to_say_so(tmp_path: Path) -> None:
    """Every GPU source read (sysfs PCI, commands) and none shows a GPU."""
    root = make_tree(
        tmp_path,
        files={"sys/bus/pci/devices/0000:00:00.0/vendor": "0x8086\n", "proc/modules": ""},
        commands={"dmesg": "[    0.000000] Linux version 6.8.0\n"},
    )
    v = _verdict(root)
    [gpu] = [f for f in v.findings if f.check == "gpu.present"]
    assert gpu.status is Status.UNKNOWN and gpu.summary.startswith("no NVIDIA GPU found")
    assert v.health.value == "undecided" and "no NVIDIA GPU found" in one_line_reason(v)
    ok = _verdict(root, Config(sections={"validate": {"expected_gpus": 0}}))
    [gpu] = [f for f in ok.findings if f.check == "gpu.present"]
    assert gpu.status is Status.PASS and gpu.summary.startswith("no NVIDIA GPU found")
    # The thin tree leaves other checks unknown; gpu.present is not among the problems.
    assert "gpu.present" not in {f.check for f in ok.problems()}
    eight = _verdict(root, Config(sections={"validate": {"expected_gpus": 8}}))
    [gpu] = [f for f in eight.findings if f.check == "gpu.present"]
    assert gpu.status is Status.FAIL and "the site expects 8" in gpu.summary
