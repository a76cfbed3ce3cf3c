"""``--junit FILE``: JUnit XML, one test suite per category, one test case per check and subject."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Verdict


def render_junit(v: Verdict) -> str:
    """The verdict as JUnit XML (CI systems and test dashboards read it)."""
    by_cat: dict[str, list[Finding]] = defaultdict(list)
    for f in v.findings:
        by_cat[f.category].append(f)
    suites = ET.Element(
        "testsuites",
        name=f"dolmen validate {v.host}",
        tests=str(len(v.findings)),
        failures=str(sum(_is_failure(f) for f in v.findings)),
        errors=str(sum(_is_error(f) for f in v.findings)),
        time=f"{v.duration_s:.3f}",
    )
    for category in sorted(by_cat):
        rows = by_cat[category]
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=category,
            hostname=v.host,
            timestamp=v.started,
            tests=str(len(rows)),
            failures=str(sum(_is_failure(f) for f in rows)),
            errors=str(sum(_is_error(f) for f in rows)),
            skipped=str(sum(f.status is Status.SKIP for f in rows)),
        )
        for f in rows:
            case = ET.SubElement(suite, "testcase", classname=f.check, name=f.subject)
            props = _properties(case, f)
            message = f.summary + (f" | fix: {f.remedy}" if f.remedy else "")
            if _is_failure(f):
                ET.SubElement(
                    case, "failure", message=message, type=f.status.value
                ).text = _evidence(f)
            elif _is_error(f):
                ET.SubElement(case, "error", message=message, type=f.status.value).text = _evidence(
                    f
                )
            elif f.status is Status.SKIP:
                ET.SubElement(case, "skipped", message=f.summary)
            elif f.status is Status.PASS:
                ET.SubElement(case, "system-out").text = f"pass: {f.summary}"
            else:
                # JUnit has no "warning": a warn (or an advisory unknown) stays a passing case,
                # marked where every reader shows it: a status property and stderr text.
                props = props if props is not None else ET.SubElement(case, "properties")
                ET.SubElement(props, "property", name="dolmen.status", value=f.status.value)
                text = f"{f.status.value.upper()}: {message}"
                evidence = _evidence(f)
                ET.SubElement(case, "system-err").text = text + (
                    f"\n{evidence}" if evidence else ""
                )
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


def _properties(case: ET.Element, f: Finding) -> ET.Element | None:
    """``dolmen.device.<key>`` properties of a GPU finding (index, uuid, serial, model,
    pci_bus_id: the ones known); the element, or None where there are none."""
    known = f.device.known() if f.device is not None else {}
    if not known:
        return None
    props = ET.SubElement(case, "properties")
    for key, value in known.items():
        ET.SubElement(props, "property", name=f"dolmen.device.{key}", value=str(value))
    return props


def _is_failure(f: Finding) -> bool:
    # Advisory warnings are not test failures; a gating fail is.
    return f.status is Status.FAIL


def _is_error(f: Finding) -> bool:
    return f.status in (Status.ERROR, Status.UNKNOWN) and f.gating


def _evidence(f: Finding) -> str:
    """One ``key: value`` line per item; lists and mappings as JSON, never a Python repr."""
    return "\n".join(
        f"{k}: {v if isinstance(v, str) else json.dumps(v, default=str, sort_keys=True)}"
        for k, v in f.evidence.items()
        if k != "traceback"
    )
