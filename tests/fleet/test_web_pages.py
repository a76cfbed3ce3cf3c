"""The dashboard's node topology section and jobs page in-process (Starlette's TestClient):
the matrix a standard run read (a real, cut-off ``nvidia-smi topo -m``) and the picture
``dolmen topo`` draws of the tree the verdict carries (the very SVG ``dolmen topo --svg``
writes), taken from an older verdict when the latest is a quick one, each said absent
with why (an older verdict without a tree, a malformed or hostile one); this node's jobs
from a real local jobs store; a node's jobs as its real agent (``dolmen serve``) answered
``fleet collect``. tests/fleet/test_web_browser.py drives the same pages in chromium."""

from __future__ import annotations

import json
import re
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

with warnings.catch_warnings():  # starlette 1.x prefers httpx2; httpx is what is installed
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from dolmen.compat import UTC
from dolmen.fleet.collect import collect
from dolmen.fleet.jobs_page import age, node_jobs
from dolmen.fleet.store import FleetStore
from dolmen.fleet.web import make_app
from tests.fleet.conftest import as_node, write
from tests.fleet.web_store import make_jobs, make_store, topology_of, with_topology
from tests.hosts import scenarios
from tests.serve.conftest import Served, short_home


def _client(fleet: Path, **kw: Any) -> TestClient:
    return TestClient(Starlette(routes=[Mount("/fleet", app=make_app(fleet, **kw))]))


def _cells(html: str, table: str) -> list[list[str]]:
    body = html.split(f'<table id="{table}"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body.split("<tbody>", 1)[1])
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)]
        for r in rows
    ]


def test_the_node_page_shows_the_matrix_the_verdict_carries(
    tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    html = _client(make_store(tmp_path, verdict_texts)).get("/fleet/node/n2").text
    assert '<h2 id="topology">Topology</h2>' in html
    rows = _cells(html, "topology-matrix")
    assert [r[0] for r in rows][:9] == [f"GPU{i}" for i in range(8)] + [
        "NIC0"
    ]  # no legend: no name
    assert rows[0][1:4] == ["X", "NV18", "NV18"] and rows[0][-2:] == ["0-79", "0"]
    assert rows[7][1 + 9] == "PIX"  # GPU7 and NIC1 on one PCIe switch
    nic6 = rows[14]  # the paste ends before NIC6's row: its column still holds its cells
    assert nic6[0] == "NIC6" and nic6[1] == "NODE" and nic6[16] == "not read"
    assert '<abbr title="18 bonded NVLinks">NV18</abbr>' in html
    assert "no row for NIC6, NIC7, NIC8 (the output ends early)" in html
    assert 'id="topology-legend"' in html
    assert "From the verdict of collection" not in html  # the latest verdict carries it
    # the picture of the 8 GPUs the run's tree holds, above the matrix, labelled
    figure = html.split('<figure id="topology-picture">', 1)[1].split("</figure>", 1)[0]
    assert html.index('id="topology-picture"') < html.index('id="topology-matrix"')
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in figure and 'role="img"' in figure
    assert 'aria-label="n2: GPU, NIC and CPU topology (sysfs)"' in figure
    assert [f">GPU{i}<" in figure for i in range(8)] == [True] * 8
    assert "NVLink NV18 between every GPU pair" in figure  # the peers from the matrix


def test_a_quick_latest_verdict_falls_back_to_the_standard_one(
    tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    fleet, src = tmp_path / "fleet", tmp_path / "in"
    standard = with_topology(as_node(verdict_texts["healthy"], "n1"), topology_of(tmp_path))
    write(src / "a", "n1.json", standard)
    first = collect([str(src / "a")], FleetStore(fleet), collection="20261201T100000.000000Z")
    write(src / "b", "n1.json", as_node(verdict_texts["healthy"], "n1"))  # the agent's, quick
    collect([str(src / "b")], FleetStore(fleet), collection="20261201T110000.000000Z")
    html = _client(fleet).get("/fleet/node/n1").text
    assert f"From the verdict of collection {first.id} (level standard" in html
    assert len(_cells(html, "topology-matrix")) == 17


def test_no_matrix_says_why_and_where_one_is_read(
    tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    html = _client(make_store(tmp_path, verdict_texts)).get("/fleet/node/n1").text
    assert 'id="topology-matrix"' not in html and "<svg" not in html
    assert (
        "No <code>nvidia-smi topo -m</code> matrix and no picture: no verdict of this node "
        "read it" in html
    )
    assert "level standard" in html and "quick tier does not run them" in html


def _svg(html: str) -> str:
    return "<svg" + html.split("<svg", 1)[1].split("</svg>", 1)[0] + "</svg>\n"


def _standard(tmp: Path, scenario: str, node: str) -> tuple[str, Path]:
    """The verdict text of ``scenario`` validated at level standard, as ``node``."""
    from dolmen.checks.model import Level
    from dolmen.checks.suite import validate
    from dolmen.host.tree import TreeHost
    from dolmen.report.json import render_json

    root = scenarios.build(scenario, tmp / scenario)
    verdict = validate(TreeHost(root), level=Level.STANDARD, config=scenarios.config(scenario))
    return as_node(render_json(verdict), node), root


def test_the_picture_is_dolmen_topos_own(tmp_path: Path) -> None:
    """The rails node (8 GPUs, a ConnectX-7 on each GPU's switch, 4 NVSwitches): the page
    embeds exactly the SVG ``dolmen topo --svg`` draws from the node's own facts."""
    from dolmen.facts.topology import collect_tree
    from dolmen.host.tree import TreeHost
    from dolmen.report.topology.svg import render_svg

    text, root = _standard(tmp_path, "h100-hgx-rails", "rails")
    write(tmp_path / "in", "rails.json", text)
    collect([str(tmp_path / "in")], FleetStore(tmp_path / "fleet"))
    html = _client(tmp_path / "fleet").get("/fleet/node/rails").text
    want = render_svg(collect_tree(TreeHost(root)), "rails: GPU, NIC and CPU topology (sysfs)")
    assert _svg(html) == want
    assert len(_cells(html, "topology-matrix")) == 17 and 'id="topology-unread"' not in html


def test_a_tree_without_a_matrix_and_a_matrix_without_a_tree(
    tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    """The healthy HGX node records no ``nvidia-smi topo -m``: its picture, and why there is
    no matrix (the NICs it could not place listed); an older verdict's matrix alone: the
    table, and why there is no picture."""
    text, _ = _standard(tmp_path, "h100-hgx-healthy", "h1")
    write(tmp_path / "in", "h1.json", text)
    older = json.loads(
        with_topology(as_node(verdict_texts["healthy"], "h2"), topology_of(tmp_path))
    )
    del older["inventory"]["topology"]["tree"]  # as dolmen wrote it before the picture
    write(tmp_path / "in", "h2.json", json.dumps(older))
    collect([str(tmp_path / "in")], FleetStore(tmp_path / "fleet"))
    client = _client(tmp_path / "fleet")
    html = client.get("/fleet/node/h1").text
    assert 'id="topology-picture"' in html and 'id="topology-matrix"' not in html
    assert (
        "No <code>nvidia-smi topo -m</code> matrix: missing: nvidia-smi topo -m: not recorded "
        "in this host tree." in html
    )
    unread = html.split('<ul id="topology-unread">', 1)[1].split("</ul>", 1)[0]
    assert "<li>NIC0.path: missing (no PCI location for mlx5_0)</li>" in unread
    html = client.get("/fleet/node/h2").text
    assert "<svg" not in html and len(_cells(html, "topology-matrix")) == 17
    assert (
        '<p id="topology-no-picture">No picture: the verdict carries no topology tree (a dolmen '
        "older than the picture made it).</p>" in html
    )


HOSTILE_NAME = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">\x1b[2J'


@pytest.mark.parametrize(
    ("edit", "shown"),
    [
        (
            lambda t: t["devices"][0].update(name=HOSTILE_NAME, bdf=HOSTILE_NAME),
            '&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x onerror="window.pwned=2"&gt;'
            "\\x1b[2J",
        ),
        (
            lambda t: t["devices"][0].update(label='GPU0"><script>'),
            "No picture: the verdict&#x27;s topology tree is malformed: devices[0].label: "
            "&#x27;GPU0&quot;&gt;&lt;script&gt;&#x27; is not GPU&lt;n&gt;",
        ),
        (
            lambda t: t["matrix"]["GPU0"].update(GPU1="<b>NV18</b>"),
            "No picture: the verdict&#x27;s topology tree is malformed: matrix.GPU0.GPU1: "
            "&#x27;&lt;b&gt;NV18&lt;/b&gt;&#x27; is not a path.",
        ),
    ],
)
def test_a_hostile_tree_is_text_never_markup(
    tmp_path: Path, verdict_texts: dict[str, str], edit: Any, shown: str
) -> None:
    topo = topology_of(tmp_path)
    edit(topo["tree"])
    text = with_topology(as_node(verdict_texts["xid79"], "n2"), topo)
    write(tmp_path / "in", "n2.json", text)
    collect([str(tmp_path / "in")], FleetStore(tmp_path / "fleet"))
    html = _client(tmp_path / "fleet").get("/fleet/node/n2").text
    assert "<script" not in html and "<img" not in html and "\x1b" not in html
    assert shown in html
    assert len(_cells(html, "topology-matrix")) == 17  # the matrix is shown all the same


def test_the_jobs_page_lists_this_nodes_jobs(tmp_path: Path, verdict_texts: dict[str, str]) -> None:
    client = _client(make_store(tmp_path, verdict_texts), jobs=make_jobs(tmp_path / "state"))
    grid = client.get("/fleet/").text
    assert '<a href="./jobs">Jobs</a>' in grid
    html = client.get("/fleet/jobs").text
    rows = _cells(html, "local-jobs")
    by_name = {r[1]: r for r in rows}
    assert set(by_name) == {"llama-ft", "nccl-sweep"}
    assert by_name["nccl-sweep"][2:5] == ["failed", "2", "local:0"]
    assert by_name["nccl-sweep"][6] == "rank 3 exited 1"
    assert re.fullmatch(r"\d+s", by_name["llama-ft"][5]), by_name["llama-ft"]  # just made
    assert '<span class="status s-fail">failed</span>' in html
    assert "No node's jobs in this store" in html
    bare = _client(make_store(tmp_path / "again", verdict_texts)).get("/fleet/jobs").text
    assert "No jobs store was given to this dashboard" in bare


@pytest.mark.parametrize(
    ("created", "want"),
    [("2026-12-01T15:00:00Z", "1h"), ("2026-12-01T15:59:30+00:00", "30s"),
     ("2026-11-29T13:30:00Z", "2d2h30m"), ("2026-12-01T17:00:00Z", "in the future (clocks differ)"),
     (None, "unknown"), ("yesterday", "unknown"), (17, "unknown")],
)  # fmt: skip
def test_age(created: object, want: str) -> None:
    assert age(created, datetime(2026, 12, 1, 16, 0, tzinfo=UTC)) == want


def test_node_jobs_come_from_the_newest_collection_that_asked() -> None:
    manifests = [
        {"collection": "c3", "items": [{"node": "n1", "file": "x"}]},  # a file: no jobs asked
        {"collection": "c2", "items": [{"node": "n1", "jobs": [{"job_id": "7"}]},
                                       {"node": "n2", "jobs_error": "HTTP 404"}]},
        {"collection": "c1", "items": [{"node": "n1", "jobs": []}, "junk", {"node": 3}]},
    ]  # fmt: skip
    assert node_jobs(manifests) == {"n1": ("c2", [{"job_id": "7"}]), "n2": ("c2", "HTTP 404")}


def test_collect_reads_an_agents_jobs_for_the_page(tmp_path: Path) -> None:
    """A real ``dolmen serve`` whose state holds a local job; ``fleet collect`` of its URL
    stores its verdict and its /v1/jobs rows; the page lists them under the node."""
    tree = scenarios.build("h100-xid79", tmp_path / "tree")
    with short_home("dfw-") as home:
        make_jobs(home / "state")
        s = Served(home, "--from", str(tree), "--interval", "1h")
        try:
            s.wait(seconds=120)
            run = collect([s.url], FleetStore(tmp_path / "fleet"))
        finally:
            s.stop()
    fleet = tmp_path / "fleet"
    [item] = run.items
    assert item.file and item.jobs is not None and item.jobs_error is None
    assert {j["name"] for j in item.jobs} == {"llama-ft", "nccl-sweep"}
    assert all(j["created"].endswith("Z") for j in item.jobs)
    html = _client(fleet).get("/fleet/jobs").text
    node = item.node
    assert f'<h3><a href="node/{node}">{node}</a></h3>' in html
    assert {r[1] for r in _cells(html, f"jobs-{node}")} == {"llama-ft", "nccl-sweep"}
    again = collect([s.url], FleetStore(fleet))  # the agent is gone: one line, no jobs
    assert again.items[0].error and again.items[0].jobs is None
