"""--junit read as a CI system reads it: junitparser (the parser CI plugins build on) on the
JUnit of a real demo host, every finding a case with the right result and properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Properties, Skipped, TestCase

from dolmen.cli.main import main


def _properties(case: TestCase) -> dict[str, str]:
    """A case's properties (junitparser reads them on suites; on a case they are a child)."""
    found = case.child(Properties)
    return {p.name: p.value for p in found} if found is not None else {}


@pytest.mark.parametrize("sample", ["hgx-h100-xid79", "hgx-h100-remap"])
def test_junitparser_reads_every_finding_with_its_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sample: str
) -> None:
    tree, out = tmp_path / "host", tmp_path / "verdict.xml"
    assert main(["demo", sample, str(tree)]) == 0
    capsys.readouterr()
    main(["validate", "--from", str(tree), "--junit", str(out), "--json"])
    doc = json.loads(capsys.readouterr().out)
    xml = JUnitXml.fromfile(str(out))
    cases = {(c.classname, c.name): c for suite in xml for c in suite}
    assert len(cases) == len(doc["findings"]) == xml.tests
    assert xml.failures == sum(f["status"] == "fail" for f in doc["findings"])
    kinds = {"fail": Failure, "skip": Skipped}
    for f in doc["findings"]:
        case = cases[(f["check"], f["subject"])]
        results = [type(r) for r in case.result]
        if f["status"] in kinds:
            assert results == [kinds[f["status"]]], f
        elif f["status"] in ("unknown", "error") and f["gating"]:
            assert results == [Error], f
        elif f["status"] == "pass":
            assert results == [], f
        else:  # a warn (or an advisory unknown) passes, marked where readers show it
            assert results == [] and f["status"].upper() in (case.system_err or ""), f
            props = _properties(case)
            assert props["dolmen.status"] == f["status"]
        if "device" in f:
            props = _properties(case)
            assert props["dolmen.device.pci_bus_id"] == f["device"]["pci_bus_id"]
    assert any(f["status"] == "fail" for f in doc["findings"])
