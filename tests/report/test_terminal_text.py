"""Issue 9 case 13: text from a bundle reaches the terminal shown, never obeyed.

A bundle's hostname, its kernel-log lines and its GPU model names go through
``values.text.printable``: no control character, C1 control or bidi override reaches
the output raw, and rich markup in host text is printed, not interpreted.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from dolmen.checks.model import Finding, Status
from dolmen.checks.verdict import Verdict
from dolmen.cli.main import main
from dolmen.report.reason import one_line_reason
from dolmen.report.terminal import render_terminal
from tests.hosts.scenarios import build

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
HOSTILE = ["\x1b]0;owned\x07", "\x1b[2J", "\r", "\b", "\x07", "\x9b", "\x85", *BIDI, "\x00"]
NVSMI = "commands/nvidia-smi%20-q%20-x"


def _raw_controls(text: str) -> list[str]:
    """Control characters in ``text`` other than the renderer's own line breaks."""
    return [
        c
        for c in text
        if c != "\n" and (unicodedata.category(c) == "Cc" or c in BIDI or c in "\u2028\u2029")
    ]


def _render(v: Verdict) -> str:
    out = io.StringIO()
    render_terminal(v, Console(file=out, width=200, color_system=None), verbose=True)
    return out.getvalue()


def _finding(subject: str, summary: str) -> Finding:
    return Finding(
        check="gpu.xid",
        category="gpu",
        status=Status.FAIL,
        subject=subject,
        summary=summary,
        remedy="drain",
        evidence={},
    )


def test_hostname_and_log_line_are_escaped() -> None:
    v = Verdict(
        "gpu01\x1b]0;owned\x07",
        "quick",
        (
            _finding(
                "gpu:0000:86:00.0", "Xid 79 at line 3: GPU has fallen\x1b[2J\roff [/] [link=x]"
            ),
        ),
        "2026-11-30T03:00:00Z",
        0.1,
    )
    text = _render(v)
    assert _raw_controls(text) == []
    assert "gpu01\\x1b]0;owned\\x07: UNHEALTHY" in text
    assert "fallen\\x1b[2J\\roff [/] [link=x]" in text  # markup printed, not interpreted


@settings(max_examples=300, deadline=None)
@given(
    host=st.text(max_size=30),
    subject=st.text(max_size=30),
    summary=st.text(max_size=80),
    extra=st.lists(st.sampled_from(HOSTILE), max_size=5),
)
def test_no_control_character_reaches_the_terminal(
    host: str, subject: str, summary: str, extra: list[str]
) -> None:
    v = Verdict(
        host + "".join(extra),
        "quick",
        (_finding("mount:" + subject + "".join(extra), summary + "".join(reversed(extra))),),
        "2026-11-30T03:00:00Z",
        0.1,
    )
    assert _raw_controls(_render(v)) == []
    assert _raw_controls(one_line_reason(v, 200)) == []


# The whole way, from a bundle's files through validate to the terminal.


@pytest.fixture(scope="module")
def xid_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build("h100-xid79", tmp_path_factory.mktemp("xid") / "tree")


def _validate(tree: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["validate", "--from", str(tree), "-v"])
    return rc, out.getvalue() + err.getvalue()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.lists(st.sampled_from(HOSTILE) | st.text(max_size=4), min_size=1, max_size=6),
    line=st.lists(st.sampled_from(HOSTILE) | st.text(max_size=4), min_size=1, max_size=6),
    model=st.lists(st.sampled_from([*BIDI, "\t"]) | st.text("abc <&", max_size=4), max_size=4),
)
def test_bundle_text_through_validate(
    xid_tree: Path, name: list[str], line: list[str], model: list[str]
) -> None:
    meta_path, dmesg_path, xml_path = (
        xid_tree / "dolmen-snapshot.json",
        xid_tree / "commands/dmesg",
        xid_tree / NVSMI,
    )
    originals = {p: p.read_bytes() for p in (meta_path, dmesg_path, xml_path)}
    try:
        meta = json.loads(originals[meta_path])
        meta["hostname"] = "gpu" + "".join(name)
        meta_path.write_text(json.dumps(meta))
        dmesg = originals[dmesg_path].decode()
        hostile_line = "".join(line).replace("\n", " ")
        dmesg_path.write_text(dmesg.replace("fallen off the bus\n", f"fallen off {hostile_line}\n"))
        xml = originals[xml_path].decode()
        model_text = "".join(model).replace("&", "&amp;").replace("<", "&lt;")
        xml_path.write_text(re.sub(r"<product_name>[^<]*", f"<product_name>H100{model_text}", xml))
        rc, text = _validate(xid_tree)
    finally:
        for p, data in originals.items():
            p.write_bytes(data)
    assert rc == 1 and "UNHEALTHY" in text  # the Xid 79 is still found
    assert _raw_controls(text) == []
