"""The dashboard app in-process (Starlette's TestClient): pages, relative links, escaping,
a node that is not there. tests/fleet/test_web_browser.py drives it in chromium."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

with warnings.catch_warnings():  # starlette 1.x prefers httpx2; httpx is what is installed
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from dolmen.fleet.pages import COLOURS
from dolmen.fleet.web import make_app
from tests.fleet.web_store import HOSTILE, make_store


@pytest.fixture
def client(tmp_path: Path, verdict_texts: dict[str, str]) -> TestClient:
    fleet = make_store(tmp_path, verdict_texts)
    return TestClient(Starlette(routes=[Mount("/fleet", app=make_app(fleet))]))


def _links(html: str) -> list[str]:
    return re.findall(r'href="([^"]*)"', html)


def test_every_link_is_relative_and_resolves_under_the_mount(client: TestClient) -> None:
    seen: set[str] = set()
    todo = ["/fleet/"]
    while todo:
        url = todo.pop()
        if url in seen:
            continue
        seen.add(url)
        res = client.get(url)
        assert res.status_code == 200, url
        for href in _links(res.text):
            assert not href.startswith(("/", "http")), (url, href)
            base = url if url.endswith("/") else url.rsplit("/", 1)[0] + "/"
            parts: list[str] = []
            for seg in (base + href).split("/"):
                if seg == "..":
                    parts.pop()
                elif seg != ".":
                    parts.append(seg)
            todo.append("/".join(parts))
    assert {"/fleet/", "/fleet/node/n1", "/fleet/node/n2", "/fleet/node/n3", "/fleet/audit"} <= seen


def test_grid_names_every_node_with_its_status_in_text(client: TestClient) -> None:
    html = client.get("/fleet/").text
    for node, status in (("n1", "healthy"), ("n2", "unhealthy"), ("n3", "unhealthy")):
        row = re.search(rf'<tr data-status="{status}"><th scope="row"><a href="node/{node}">', html)
        assert row, node
    assert "3 nodes: 1 healthy, 0 degraded, 2 unhealthy" in html
    assert "cut off" not in html  # a rejected file is not a node (the audit page lists it)


def test_hostile_text_from_a_verdict_is_escaped(client: TestClient) -> None:
    html = client.get("/fleet/node/n3").text
    assert HOSTILE not in html and "&lt;script&gt;window.pwned" in html


def test_node_page_lists_gpus_xids_and_state(client: TestClient) -> None:
    html = client.get("/fleet/node/n2").text
    assert html.count('<tr class="gpu">') == 8
    assert re.search(r"<td>gpu:00000000:86:00.0</td><td>79</td>", html)
    assert 'id="tune-state"' in html and 'id="stack-state"' in html


def test_unknown_and_hostile_node_names_are_404(client: TestClient) -> None:
    for name in ("n9", "..%2F..%2Fetc", "%3Cb%3E"):
        res = client.get(f"/fleet/node/{name}")
        assert res.status_code == 404 and "<b>" not in res.text


def test_audit_page_lists_the_collection_and_what_failed(client: TestClient) -> None:
    html = client.get("/fleet/audit").text
    assert "Collection " in html and "cut.json" in html and "cut off" in html
    assert html.count(">intact</span>") == 3


def test_audit_page_shows_a_stored_verdict_changed_after_collection(
    tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    fleet = make_store(tmp_path, verdict_texts)
    (n2,) = (fleet / "nodes" / "n2").iterdir()
    n2.write_text(n2.read_text().replace('"unhealthy"', '"healthy"'))  # someone edits it
    (n3,) = (fleet / "nodes" / "n3").iterdir()
    n3.unlink()
    html = TestClient(make_app(fleet)).get("/audit").text
    assert re.search(r"stored as n2 <span[^>]*>changed</span>", html)
    assert re.search(r"stored as n3 <span[^>]*>missing</span>", html)
    assert re.search(r"stored as n1 <span[^>]*>intact</span>", html)


def test_an_empty_store_says_so(tmp_path: Path) -> None:
    res = TestClient(make_app(tmp_path / "none")).get("/")
    assert res.status_code == 200 and "holds no verdict yet" in res.text


def _luminance(hex_colour: str) -> float:
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


@pytest.mark.parametrize("status", sorted(COLOURS))
def test_status_colours_clear_wcag_aa_contrast(status: str) -> None:
    bg, fg = (_luminance(c) for c in COLOURS[status])
    ratio = (max(bg, fg) + 0.05) / (min(bg, fg) + 0.05)
    assert ratio >= 4.5, (status, ratio)
