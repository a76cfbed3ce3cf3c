"""Renderers of one verdict: JSON schema, JUnit, Prometheus textfile, the one-line reason."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from dolmen.checks.model import Device, Finding, Status
from dolmen.checks.verdict import Verdict
from dolmen.report.json import render_json
from dolmen.report.junit import render_junit
from dolmen.report.prometheus import render_prometheus
from dolmen.report.reason import one_line_reason


def _f(check: str, status: Status, subject: str = "host", gating: bool = True) -> Finding:
    return Finding(
        check=check,
        category=check.split(".")[0],
        status=status,
        subject=subject,
        summary=f"{check} is {status.value}",
        remedy="do the thing" if status is not Status.PASS else None,
        evidence={"value": 1, "quote": 'a "b"\nc'},
        gating=gating,
    )


def _verdict(*findings: Finding) -> Verdict:
    return Verdict("gpu01", "quick", tuple(findings), "2026-11-30T03:00:00Z", 0.125)


def test_json_document_schema() -> None:
    v = _verdict(_f("gpu.ecc.volatile_dbe", Status.FAIL, "gpu:00000000:9B:00.0"))
    doc = json.loads(render_json(v))
    assert doc["schema"] == "dolmen.verdict/1"
    assert doc["host"] == "gpu01" and doc["status"] == "unhealthy" and doc["exit_code"] == 1
    f = doc["findings"][0]
    assert set(f) >= {"check", "status", "subject", "summary", "remedy", "evidence"}
    assert f["subject"] == "gpu:00000000:9B:00.0" and f["status"] == "fail"
    assert doc["counts"]["fail"] == 1 and doc["counts"]["pass"] == 0


def test_junit_is_valid_and_counts() -> None:
    v = _verdict(
        _f("gpu.ecc.volatile_dbe", Status.FAIL, "gpu:0"),
        _f("gpu.temperature", Status.PASS, "gpu:0"),
        _f("interconnect.ib.state", Status.SKIP),
        _f("stack.driver", Status.UNKNOWN),
    )
    root = ET.fromstring(render_junit(v).split("\n", 1)[1])
    assert root.get("tests") == "4" and root.get("failures") == "1" and root.get("errors") == "1"
    gpu = root.find("testsuite[@name='gpu']")
    assert gpu is not None and gpu.get("failures") == "1"
    case = gpu.find("testcase[@classname='gpu.ecc.volatile_dbe']")
    assert case is not None and case.find("failure") is not None
    assert root.find("testsuite[@name='interconnect']/testcase/skipped") is not None


def test_junit_shows_warnings_and_readable_evidence() -> None:
    """A warn stays a passing case (JUnit has no warning) but is marked: a dolmen.status
    property and WARN text on stderr; evidence is JSON, never a Python repr (issue 17)."""
    warn = Finding(
        "gpu.temperature",
        "gpu",
        Status.WARN,
        "gpu:0",
        "hot",
        "cool it",
        {"temps": {"gpu": 84, "slowdown": 87}, "who": ["a"]},
    )
    root = ET.fromstring(render_junit(_verdict(warn)).split("\n", 1)[1])
    case = root.find("testsuite/testcase")
    assert case is not None and case.find("failure") is None
    prop = case.find("properties/property[@name='dolmen.status']")
    assert prop is not None and prop.get("value") == "warn"
    err = case.findtext("system-err") or ""
    assert err.startswith("WARN: hot | fix: cool it")
    assert 'temps: {"gpu": 84, "slowdown": 87}' in err and 'who: ["a"]' in err
    assert "{'gpu'" not in err


def test_prometheus_parses_with_the_official_parser() -> None:
    v = _verdict(
        _f("gpu.ecc.volatile_dbe", Status.FAIL, 'gpu:0"x'),
        _f("interconnect.ib.state", Status.SKIP),
        _f("gpu.temperature", Status.PASS, "gpu:0"),
    )
    families = {f.name: f for f in text_string_to_metric_families(render_prometheus(v))}
    assert families["dolmen_health"].samples[0].value == 2
    statuses = {
        (s.labels["check"], s.labels["subject"], s.labels["status"])
        for s in families["dolmen_check_status"].samples
    }
    assert ("gpu.ecc.volatile_dbe", 'gpu:0"x', "fail") in statuses
    assert not any(c == "interconnect.ib.state" for c, _, _ in statuses)  # skips left out
    counts = {s.labels["status"]: s.value for s in families["dolmen_findings"].samples}
    assert counts["fail"] == 1 and counts["skip"] == 1


def test_one_line_reason() -> None:
    healthy = _verdict(_f("gpu.temperature", Status.PASS))
    assert one_line_reason(healthy) == "dolmen: healthy"
    many = _verdict(
        *[_f(f"gpu.check{i}", Status.FAIL, f"gpu:0000:{i:02x}:00.0") for i in range(8)],
        _f("stack.driver", Status.UNKNOWN),
    )
    line = one_line_reason(many, 80)
    assert len(line) <= 80
    assert line.startswith("dolmen: unhealthy: gpu.check0 gpu:0000:00:00.0")
    assert "more)" in line
    assert one_line_reason(_verdict(_f("tuning.thp", Status.WARN, gating=False))).startswith(
        "dolmen: degraded: 1 warning(s): tuning.thp"
    )


def test_terminal_shows_problems_with_remedies_and_hides_noise() -> None:
    import io

    from rich.console import Console

    from dolmen.report.terminal import render_terminal

    v = _verdict(
        _f("gpu.ecc.volatile_dbe", Status.FAIL, "gpu:0000:9b:00.0"),
        _f("gpu.temperature", Status.PASS, "gpu:0000:9b:00.0"),
        _f("security.tpm", Status.UNKNOWN, gating=False),
        _f("interconnect.ib.state", Status.SKIP),
    )
    out = io.StringIO()
    render_terminal(v, Console(file=out, width=160, color_system=None))
    text = out.getvalue()
    assert "FAIL  gpu.ecc.volatile_dbe" in text and "fix: do the thing" in text
    assert "gpu.temperature" not in text and "security.tpm" not in text
    assert "1 advisory signal(s) could not be read here (tpm)" in text
    assert "gpu01: UNHEALTHY  (1 fail, 0 unknown, 0 warn, 1 pass, 1 skip, 1 advisory unread" in text
    out = io.StringIO()
    render_terminal(v, Console(file=out, width=160, color_system=None), verbose=True)
    assert "security.tpm" in out.getvalue() and "gpu.temperature" in out.getvalue()


H100 = Device(
    index=3,
    uuid="GPU-3",
    serial="1650000000004",
    model='NVIDIA "H100"',
    pci_bus_id="00000000:86:00.0",
)


def _gpu(status: Status, device: Device | None = H100) -> Finding:
    return replace(_f("gpu.xid", status, "gpu:00000000:86:00.0"), device=device)


def test_json_carries_the_device_where_known() -> None:
    v = _verdict(_gpu(Status.FAIL), _gpu(Status.WARN, Device(index=3)), _f("stack.x", Status.FAIL))
    rows = json.loads(render_json(v))["findings"]
    assert rows[0]["device"] == {
        "index": 3,
        "uuid": "GPU-3",
        "serial": "1650000000004",
        "model": 'NVIDIA "H100"',
        "pci_bus_id": "00000000:86:00.0",
    }
    assert rows[1]["device"] == {"index": 3}  # keys absent when unknown, never null
    assert "device" not in rows[2]


def test_junit_carries_the_device_as_properties() -> None:
    root = ET.fromstring(render_junit(_verdict(_gpu(Status.WARN))).split("\n", 1)[1])
    case = root.find("testsuite/testcase")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["dolmen.device.uuid"] == "GPU-3" and props["dolmen.device.index"] == "3"
    assert props["dolmen.device.serial"] == "1650000000004"
    assert props["dolmen.status"] == "warn"
    assert next(iter(case)).tag == "properties" and len(case.findall("properties")) == 1


def test_prometheus_gpu_series_carry_dcgm_exporter_labels() -> None:
    v = _verdict(_gpu(Status.FAIL), _gpu(Status.PASS, None), _f("stack.x", Status.FAIL))
    families = {f.name: f for f in text_string_to_metric_families(render_prometheus(v))}
    samples = families["dolmen_check_status"].samples
    by = {(s.labels["check"], s.labels["status"]): s.labels for s in samples}
    gpu = by[("gpu.xid", "fail")]
    assert gpu["gpu"] == "3" and gpu["UUID"] == "GPU-3" and gpu["modelName"] == 'NVIDIA "H100"'
    assert gpu["pci_bus_id"] == "00000000:86:00.0"  # dcgm-exporter's spelling
    assert "serial" not in gpu and "gpu" not in by[("gpu.xid", "pass")]
    assert "UUID" not in by[("stack.x", "fail")]
