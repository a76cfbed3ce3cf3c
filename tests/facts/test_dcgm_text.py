"""The ``dcgmi diag`` result table parser: the real excerpts of ../shared/recordings/dcgm
(DCGM 3.3.7, 3.0.4, 3.3.1, 2.4.6; all cut by the index that kept them), plus whole, cut,
junk and hostile tables; and facts.dcgm's fallback to it under any ``dcgmi diag`` key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dolmen.facts.dcgm import collect
from dolmen.facts.dcgm_text import parse_dcgm_text
from dolmen.host.paste.detect import detect
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree, recording

EXCERPTS = "dcgm/issues__dcgmi-diag-excerpts.md"

WHOLE = """\
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.3.7                                          |
| Driver Version Detected   | 560.35.03                                      |
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
+-----  Integration  -------+------------------------------------------------+
| PCIe                      | Pass - GPUs: 0, 1                              |
|                           | Fail - GPU: 2                                  |
| Warning                   | GPU 2 link speed dropped                       |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Warn - GPU: 0                                  |
| Info                      | GPU 0 ran warm                                 |
| Diagnostic                | Skip - All                                     |
+---------------------------+------------------------------------------------+
"""


def _blocks() -> list[str]:
    text = recording(EXCERPTS).read_text()
    return re.findall(r"```\n(.*?)```", text, re.S)


def _rows(text: str) -> list[tuple[str, str, str, int | None]]:
    return [(r.category, r.test, r.status, r.gpu) for r in parse_dcgm_text(text).results]


def test_whole_table() -> None:
    facts = parse_dcgm_text(WHOLE)
    assert (facts.version, facts.driver_version, facts.unread) == ("3.3.7", "560.35.03", {})
    assert _rows(WHOLE) == [
        ("Deployment", "Denylist", "pass", None),
        ("Integration", "PCIe", "pass", 0),
        ("Integration", "PCIe", "pass", 1),
        ("Integration", "PCIe", "fail", 2),
        ("Hardware", "GPU Memory", "warn", 0),
        ("Hardware", "Diagnostic", "skip", None),
    ]
    pcie = facts.results[3]
    assert pcie.messages == ("GPU 2 link speed dropped",)
    assert facts.results[4].info == ("GPU 0 ran warm",)


def test_real_excerpts() -> None:
    b198, b55, b52, b49 = _blocks()
    f198 = parse_dcgm_text(b198)  # the nvlink output above it is not part of the table
    assert (f198.version, f198.driver_version) == ("3.3.7", "560.35.03")
    assert _rows(b198) == [("Deployment", "Denylist", "pass", None)]
    assert "cut off at 'NVML Library'" in f198.unread["rest"]
    f55 = parse_dcgm_text(b55)  # DCGM 3.0.4: no Metadata section
    assert f55.version is None and len(f55.results) == 9
    assert {r.status for r in f55.results} == {"pass"}
    assert "cut off at 'PCIe'" in f55.unread["rest"]
    f52 = parse_dcgm_text(b52)
    assert (f52.version, len(f52.results)) == ("3.3.1", 7)
    assert "'Graphics Processes'" in f52.unread["rest"]
    f49 = parse_dcgm_text(b49)  # DCGM 2.4.6: a piece of the table, its Warning wrapped
    assert _rows(b49) == [("Integration", "PCIe", "fail", None)]
    (msg,) = f49.results[0].messages
    assert "NvLink link 1 is currently down Run a field diagnostic" in msg
    assert "link 2 is currently down" in msg and "link 4 is currently down" in msg


def test_real_excerpts_detected() -> None:
    for block in _blocks():
        start = block.find("Successfully") if "Successfully" in block else 0
        found = detect(block[start:])
        assert found is not None and found.kind.name == "dcgm-diag-text"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "malformed: not a dcgmi diag result table"),
        ("hello\nworld\n", "malformed: not a dcgmi diag result table"),
        (WHOLE[: WHOLE.index("| Denylist")], "malformed: no test result"),
        (WHOLE[: WHOLE.index("| Denylist") + 12], "malformed: no test result (cut off at"),
        ("| a | b |\n| c | d |\n", "malformed: not a dcgmi diag result table"),
        ("\x00\xff|||\n" * 50, "malformed: not a dcgmi diag result table"),
    ],
)
def test_junk_and_cut(text: str, why: str) -> None:
    facts = parse_dcgm_text(text)
    assert facts.results == () and facts.unread["diag"].startswith(why)


def test_cut_mid_row_drops_it() -> None:
    cut = WHOLE[: WHOLE.index("| Fail - GPU: 2") + 9]  # "| Fail - G"
    rows = _rows(cut)
    assert ("Integration", "PCIe", "fail", 2) not in rows and len(rows) == 3
    assert "rest" in parse_dcgm_text(cut).unread


def test_hostile() -> None:
    weird = WHOLE.replace("Pass - GPUs: 0, 1", "Pass - GPUs: 99999999999999999999, x")
    # a GPU list DCGM would not write names no GPU: the result stays the run's
    assert ("Integration", "PCIe", "pass", None) in _rows(weird)
    huge = "|-----  Deployment  ---|\n" + "| T | Pass |\n" * 100_000
    assert len(parse_dcgm_text(huge).results) < 20_001
    assert parse_dcgm_text("| Warning | orphan |\n|  | x |\n").results == ()
    crlf = WHOLE.replace("\n", "\r\n")
    assert _rows(crlf) == _rows(WHOLE)


@pytest.mark.parametrize("argv", ["dcgmi diag", "dcgmi diag -r 2", "dcgmi diag -r 3 -g 7"])
def test_collect_reads_the_table_under_any_diag_key(tmp_path: Path, argv: str) -> None:
    facts = collect(TreeHost(make_tree(tmp_path / "t", commands={argv: (WHOLE, 226)})))
    assert facts.version == "3.3.7" and len(facts.results) == 6 and facts.unread == {}


def test_collect_prefers_json(tmp_path: Path) -> None:
    doc = '{"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"gpu_ids": "0", "status": "Fail"}]}]}]}}'
    host = TreeHost(
        make_tree(tmp_path / "t", commands={"dcgmi diag -j": doc, "dcgmi diag -r 2": WHOLE})
    )
    assert [r.status for r in collect(host).results] == ["fail"]
    # JSON recorded under a text key is still read as JSON
    host2 = TreeHost(make_tree(tmp_path / "u", commands={"dcgmi diag -r 3 -j": doc}))
    assert [r.status for r in collect(host2).results] == ["fail"]
