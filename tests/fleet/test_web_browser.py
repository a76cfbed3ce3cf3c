"""The dashboard in a real browser: Playwright (PyPI) driving Debian's chromium against
``make_app`` mounted under /fleet and served by uvicorn on 127.0.0.1, as ``dolmen serve
--fleet`` mounts it. Clicks through grid, node (its topology picture and matrix), jobs and
audit pages; on the rails node, the picture ``dolmen topo`` draws compared box by box with
its layout, and a node whose verdict has a matrix and no tree; saves screenshots and
compares them structurally (size, the boxes of the page's parts, the same after a
reload); checks the accessibility basics in the rendered page: language, labels, table
captions and header scopes, and the contrast of every status colour as computed."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dolmen.fleet.collect import collect
from dolmen.fleet.store import FleetStore
from tests.fleet.web_store import make_jobs, make_store

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 900}

pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason=f"{CHROMIUM} is not installed (Debian package chromium, scripts/debian-packages.txt)",
)


@contextmanager
def _serve(fleet: Path, jobs: Any = None) -> Iterator[str]:
    """The app over ``fleet`` under /fleet, served by uvicorn in a thread on a loopback
    port: its URL."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from dolmen.fleet.web import make_app

    app = Starlette(routes=[Mount("/fleet", app=make_app(fleet, jobs=jobs))])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/fleet/"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def base_url(tmp_path: Path, verdict_texts: dict[str, str]) -> Iterator[str]:
    """The store of web_store.py, with its jobs."""
    fleet = make_store(tmp_path, verdict_texts)
    with _serve(fleet, make_jobs(tmp_path / "state")) as url:
        yield url


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    home = tmp_path / "home"  # chromium writes under HOME whatever it is told
    home.mkdir()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox"],
            env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        )
        try:
            yield browser.new_page(viewport=VIEWPORT)
        finally:
            browser.close()


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _boxes(page: Any, selector: str) -> list[tuple[int, int, int, int]]:
    out = []
    for el in page.locator(selector).all():
        b = el.bounding_box()
        out.append((round(b["x"]), round(b["y"]), round(b["width"]), round(b["height"])))
    return out


def _shot(page: Any, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    width, height = _png_size(path)
    assert width == VIEWPORT["width"] and height >= 300


_A11Y = """() => {
  const rgb = s => s.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
  const lum = c => {
    const l = c.map(v => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
  };
  const ratio = (a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  const cells = [...document.querySelectorAll('[class*="s-"]')].map(el => {
    const st = getComputedStyle(el);
    return {cls: el.className, text: el.textContent.trim(),
            ratio: ratio(lum(rgb(st.color)), lum(rgb(st.backgroundColor)))};
  });
  return {
    lang: document.documentElement.lang,
    title: document.title,
    unlabelled: [...document.querySelectorAll('input, select, textarea')]
      .filter(el => !el.labels || el.labels.length === 0).map(el => el.id || el.name),
    tables_without_caption: [...document.querySelectorAll('table')].filter(t => !t.caption).length,
    th_without_scope: [...document.querySelectorAll('th')].filter(t => !t.scope).length,
    cells,
    pwned: window.pwned || 0,
  };
}"""


def _accessible(page: Any) -> dict[str, Any]:
    got: dict[str, Any] = page.evaluate(_A11Y)
    assert got["lang"] == "en" and got["title"].endswith("dolmen fleet")
    assert got["unlabelled"] == [] and got["tables_without_caption"] == 0
    assert got["th_without_scope"] == 0
    assert got["cells"], "no status shown"
    for cell in got["cells"]:
        assert cell["text"], f"status by colour only: {cell}"
        assert cell["ratio"] >= 4.5, cell
    assert got["pwned"] == 0
    return got


def test_click_through_grid_node_and_audit(page: Any, base_url: str, tmp_path: Path) -> None:
    shots = tmp_path / "shots"
    shots.mkdir()
    page.goto(base_url)
    assert page.locator("h1").inner_text() == "Fleet"
    rows = page.locator("#grid tbody tr")
    assert rows.count() == 3
    assert [r.get_attribute("data-status") for r in rows.all()] == [
        "healthy",
        "unhealthy",
        "unhealthy",
    ]
    _accessible(page)
    _shot(page, shots / "grid.png")
    # layout: the grid is inside the viewport, rows stacked in order under the header
    boxes = _boxes(page, "#grid tr")
    assert len(boxes) == 4
    assert all(b[0] >= 0 and b[0] + b[2] <= VIEWPORT["width"] for b in boxes)
    assert [b[1] for b in boxes] == sorted(b[1] for b in boxes) and len({b[1] for b in boxes}) == 4
    # the same structure after a reload (a screenshot compared by its parts, not pixels)
    page.reload()
    assert _boxes(page, "#grid tr") == boxes
    _shot(page, shots / "grid-reload.png")
    assert _png_size(shots / "grid.png") == _png_size(shots / "grid-reload.png")

    # the one script: hide the healthy nodes
    page.get_by_label("Show only nodes with problems").check()
    assert [r.is_visible() for r in rows.all()] == [False, True, True]
    page.get_by_label("Show only nodes with problems").uncheck()
    assert all(r.is_visible() for r in rows.all())

    # node page of the node with the Xid: its GPUs, the lost one failing, the Xid listed
    page.get_by_role("link", name="n2", exact=True).first.click()
    page.wait_for_url("**/fleet/node/n2")
    assert page.locator("h1").inner_text() == "Node n2"
    gpus = page.locator("#gpus tbody tr")
    assert gpus.count() == 8
    lost = page.locator("#gpus tbody tr", has_text="00000000:86:00.0")
    assert lost.locator("td").nth(2).inner_text() == "fail"
    assert "79" in page.locator("#xids tbody tr").first.inner_text()
    # the topology matrix its standard run read: 17 devices, a header cell per column
    matrix = page.locator("#topology-matrix")
    assert matrix.locator("tbody tr").count() == 17
    assert matrix.locator("thead th").count() == 1 + 17 + 2
    assert matrix.locator("tbody tr").first.locator("td").nth(1).inner_text() == "NV18"
    nv = matrix.locator("abbr", has_text="NV18").first
    assert nv.get_attribute("title") == "18 bonded NVLinks"
    box = matrix.bounding_box()
    assert box is not None and box["y"] > page.locator("#gpus").bounding_box()["y"]
    # dolmen topo's picture of its tree above the matrix, named for a screen reader
    picture = page.get_by_role("img", name="n2: GPU, NIC and CPU topology (sysfs)")
    assert picture.is_visible()
    shown = picture.bounding_box()
    assert shown is not None and shown["y"] < box["y"] and shown["height"] > 100
    assert page.locator("#topology-picture figcaption").inner_text().startswith("How the GPUs")
    _accessible(page)
    _shot(page, shots / "node-n2.png")

    # the node with hostile text in a summary: shown as text, not run
    page.goto(base_url + "node/n3")
    assert "<script>window.pwned" in page.locator("main").inner_text()
    assert _accessible(page)["pwned"] == 0

    # the jobs page from the navigation: this node's jobs, their state in text and colour
    page.get_by_role("link", name="Jobs", exact=True).click()
    page.wait_for_url("**/fleet/jobs")
    jobs = page.locator("#local-jobs tbody tr")
    assert jobs.count() == 2
    states = {r.get_attribute("data-state") for r in jobs.all()}
    assert states == {"pending", "failed"}
    failed = page.locator("#local-jobs tbody tr[data-state=failed]")
    assert failed.locator("td").nth(2).inner_text() == "2"  # restarts
    _accessible(page)
    rows = _boxes(page, "#local-jobs tr")
    page.reload()
    assert _boxes(page, "#local-jobs tr") == rows
    _shot(page, shots / "jobs.png")

    # audit trail, then back to the grid through the navigation
    page.get_by_role("link", name="Audit trail").click()
    page.wait_for_url("**/fleet/audit")
    assert page.locator("section.collection").count() == 1
    assert "cut off" in page.locator("section.collection").inner_text()
    _shot(page, shots / "audit.png")
    page.get_by_role("link", name="Fleet", exact=True).click()
    page.wait_for_url("**/fleet/")
    assert page.locator("#grid tbody tr").count() == 3
    assert sorted(p.name for p in shots.iterdir()) == [
        "audit.png",
        "grid-reload.png",
        "grid.png",
        "jobs.png",
        "node-n2.png",
    ]


def _svg_boxes(page: Any) -> list[tuple[str, float, float]]:
    """The picture's boxes as chromium laid them out, in drawing order: each one's bold
    first line and its rectangle's corner relative to the picture's, in CSS pixels."""
    got: list[list[Any]] = page.evaluate(
        """() => {
          const svg = document.querySelector('#topology-picture svg');
          const o = svg.getBoundingClientRect();
          const rects = [...svg.querySelectorAll('rect[rx]')];
          const names = [...svg.querySelectorAll('text[font-weight]')];
          return rects.map((r, i) => {
            const b = r.getBoundingClientRect();
            return [names[i].textContent, b.x - o.x, b.y - o.y];
          });
        }"""
    )
    return [(str(n), float(x), float(y)) for n, x, y in got]


def test_the_rails_nodes_picture_is_its_layout(
    page: Any, tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    """The rails node's standard verdict (8 GPUs, a ConnectX-7 on each GPU's switch, 4
    NVSwitches): the picture in chromium has every box of ``layout()`` where the layout
    puts it (the same left-to-right order, devices on one row under their CPUs), the
    NVLink band, a dashed line per GPU to its NIC, a keyboard-reachable scroll region; the
    same after a reload. A node whose verdict holds the matrix and no tree: the table and
    why there is no picture. A quick-only node: why there is neither."""
    from dolmen.checks.model import Level
    from dolmen.checks.suite import validate
    from dolmen.facts.topology import collect_tree
    from dolmen.host.tree import TreeHost
    from dolmen.report.json import render_json
    from dolmen.report.topology.layout import layout
    from tests.fleet.conftest import as_node, write
    from tests.fleet.web_store import topology_of, with_topology
    from tests.hosts import scenarios

    root = scenarios.build("h100-hgx-rails", tmp_path / "rails")
    verdict = validate(TreeHost(root), level=Level.STANDARD)
    src = tmp_path / "in"
    write(src, "rails.json", as_node(render_json(verdict), "rails"))
    older = json.loads(
        with_topology(as_node(verdict_texts["healthy"], "old"), topology_of(tmp_path))
    )
    del older["inventory"]["topology"]["tree"]
    write(src, "old.json", json.dumps(older))
    write(src, "quick.json", as_node(verdict_texts["healthy"], "quick"))
    collect([str(src)], FleetStore(tmp_path / "fleet"))
    lay = layout(collect_tree(TreeHost(root)))
    devices = sorted((b for b in lay.boxes.values() if b.kind in ("gpu", "nic", "nvswitch")),
                     key=lambda b: b.x)  # fmt: skip
    with _serve(tmp_path / "fleet") as url:
        page.goto(url + "node/rails")
        picture = page.get_by_role("img", name="rails: GPU, NIC and CPU topology (sysfs)")
        assert picture.is_visible()
        svg = page.locator("#topology-picture svg")
        assert svg.locator("rect").count() == 1 + len(lay.boxes)  # the white ground, the boxes
        # every box of the layout, where the layout puts it (svg.py's scale: 116 px a
        # column, 84 a level, a 24 px margin): the structure, not the pixels
        drawn = _svg_boxes(page)
        want = [(b.lines[0], 24 + b.x * 116, 24 + b.y * 84) for b in lay.boxes.values()]
        assert [d[0] for d in drawn] == [w[0] for w in want]
        assert all(abs(d[1] - w[1]) < 1 and abs(d[2] - w[2]) < 1 for d, w in zip(drawn, want))
        row = {d[0]: d for d in drawn if d[0][:3] in ("GPU", "NIC", "NVS")}
        assert sorted(row, key=lambda k: row[k][1]) == [b.key for b in devices]
        assert len(row) == 8 + 9 + 4 and len({round(d[2]) for d in row.values()}) == 1
        cpus = [d for d in drawn if d[0].startswith("CPU ")]
        assert len(cpus) == 2 and all(c[2] < row["GPU0"][2] for c in cpus)
        assert svg.locator("text", has_text="NVLink NV18 between every GPU pair").count() == 1
        assert svg.locator("path[stroke-dasharray]").count() == 8  # each GPU to its HCA
        region = page.get_by_role("region", name="topology picture")
        region.focus()
        assert page.evaluate("document.activeElement.getAttribute('aria-label')") == (
            "topology picture"
        )
        assert page.locator("#topology-matrix tbody tr").count() == 17
        _accessible(page)
        _shot(page, tmp_path / "rails.png")
        page.reload()
        assert _svg_boxes(page) == drawn
        _shot(page, tmp_path / "rails-reload.png")
        assert _png_size(tmp_path / "rails.png") == _png_size(tmp_path / "rails-reload.png")

        page.goto(url + "node/old")
        assert page.locator("#topology-picture").count() == 0
        assert page.locator("#topology-matrix tbody tr").count() == 17
        assert page.locator("#topology-no-picture").inner_text() == (
            "No picture: the verdict carries no topology tree (a dolmen older than the "
            "picture made it)."
        )
        _accessible(page)

        page.goto(url + "node/quick")
        section = page.locator("main").inner_text()
        assert "No nvidia-smi topo -m matrix and no picture: no verdict of this node" in section
        assert page.locator("svg").count() == 0
