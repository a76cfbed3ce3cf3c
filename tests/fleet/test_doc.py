"""A verdict from another machine is checked before it is believed, and rebuilt so that its
health and drain reason are the ones the node itself computed."""

from __future__ import annotations

import json

import pytest

from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.demo import build_sample
from dolmen.fleet.doc import NotAVerdict, node_name_problem, parse_verdict, verdict_of
from dolmen.host.tree import TreeHost
from dolmen.report.json import verdict_document
from dolmen.report.reason import one_line_reason

GOOD = {"schema": "dolmen.verdict/1", "host": "n1", "status": "healthy", "findings": []}


def _bytes(doc: object) -> bytes:
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"\xff\xfe{", "not UTF-8"),
        (_bytes(GOOD)[:-7], "cut off (truncated JSON)"),
        (b'{"schema": "dolmen.verdict/1", "host": ', "cut off"),
        (b'{"schema": "dolmen.verdict/1", "inventory": {"x": nu', "cut off"),  # in a literal
        (b'{"schema": "dolmen.verdict/1", "ok": fals', "cut off"),
        (b'{"schema": "dolmen.verdict/1", "ok": nope}', "not JSON"),
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b"[1, 2]", "a JSON list"),
        (b"null", "a JSON NoneType"),
        (b"[" * 100000 + b"]" * 100000, "not JSON"),
        (_bytes({**GOOD, "schema": "dolmen.facts/1"}), "not dolmen.verdict/1"),
        (_bytes({**GOOD, "host": "../../etc"}), "not a plain node name"),
        (_bytes({**GOOD, "host": "a/b"}), "not a plain node name"),
        (_bytes({**GOOD, "host": ""}), "no host name"),
        (_bytes({**GOOD, "host": 7}), "no host name"),
        (_bytes({**GOOD, "status": "fine"}), "is not one of"),
        (_bytes({**GOOD, "findings": {}}), "no findings list"),
        (
            _bytes({**GOOD, "findings": [{"check": "x", "status": "bad", "subject": "host"}]}),
            "valid status",
        ),
        (_bytes({**GOOD, "findings": [{"status": "pass"}]}), "no check id"),
        (_bytes({**GOOD, "findings": [{"check": "x", "status": "pass"}]}), "no subject"),
        (_bytes({**GOOD, "inventory": []}), "inventory is not an object"),
    ],
)
def test_what_is_not_a_verdict_says_why_in_one_line(data: bytes, why: str) -> None:
    with pytest.raises(NotAVerdict) as e:
        parse_verdict(data)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_a_minimal_verdict_parses() -> None:
    assert parse_verdict(_bytes(GOOD))["host"] == "n1"


@pytest.mark.parametrize("name", ["n1", "gpu-node-07.example.org", "a_b", "N9"])
def test_plain_node_names(name: str) -> None:
    assert node_name_problem(name) is None


@pytest.mark.parametrize("name", ["-x", ".", "..", "a b", "a\nb", "x" * 300, "ä"])
def test_names_that_cannot_be_a_folder(name: str) -> None:
    assert node_name_problem(name)


@pytest.mark.parametrize("sample", ["hgx-h100", "hgx-h100-xid79", "hgx-h100-remap"])
def test_rebuilt_verdict_judges_as_the_node_did(sample: str, tmp_path: object) -> None:
    from pathlib import Path

    tree = build_sample(sample, Path(str(tmp_path)) / sample)
    v = validate(TreeHost(tree), level=Level.QUICK)
    doc = parse_verdict(json.dumps(verdict_document(v)).encode())
    again = verdict_of(doc)
    assert again.health is v.health
    assert doc["status"] == v.health.value
    assert one_line_reason(again, 80) == one_line_reason(v, 80)
