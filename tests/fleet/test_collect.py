"""``dolmen fleet collect``: files, folders and agents (a real HTTP server on 127.0.0.1)
into the store; every broken source is one line and loses nothing else."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.fleet.collect import agent_url, collect
from dolmen.fleet.store import FleetStore
from tests.fleet.conftest import as_node, write


class Agent:
    """A stand-in for ``dolmen serve``'s GET /v1/verdict/latest: a real server on loopback."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, bytes]] = {}
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code, body = agent.routes.get(self.path, (404, b'{"error": "not found"}'))
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def agent() -> Iterator[Agent]:
    a = Agent()
    a.thread.start()
    try:
        yield a
    finally:
        a.server.shutdown()
        a.server.server_close()
        a.thread.join(5)


def _dead_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed on return: nothing listens there


def test_agent_url_adds_the_verdict_path() -> None:
    assert agent_url("http://n1:9405") == "http://n1:9405/v1/verdict/latest"
    assert agent_url("http://n1:9405/") == "http://n1:9405/v1/verdict/latest"
    assert agent_url("http://n1:9405/x/v.json") == "http://n1:9405/x/v.json"


def test_files_folders_and_agents_each_become_one_file_per_node(
    tmp_path: Path, verdict_texts: dict[str, str], agent: Agent
) -> None:
    src = tmp_path / "in"
    write(src, "n1.json", as_node(verdict_texts["healthy"], "n1"))
    write(src, "n2.json", as_node(verdict_texts["xid79"], "n2"))
    write(src, "notes.txt", "not read: not *.json")
    single = write(tmp_path, "n3.json", as_node(verdict_texts["remap"], "n3"))
    agent.routes["/v1/verdict/latest"] = (200, as_node(verdict_texts["healthy"], "n4").encode())
    store = FleetStore(tmp_path / "fleet")
    run = collect([str(src), str(single), agent.url], store)
    assert [i.node for i in run.stored] == ["n1", "n2", "n3", "n4"]
    assert not run.failed
    assert store.nodes() == ["n1", "n2", "n3", "n4"]
    # the bytes as received, one file per node per collection
    stored = store.root / "nodes" / "n4" / f"{run.id}.json"
    assert stored.read_text() == as_node(verdict_texts["healthy"], "n4")
    manifest = json.loads((store.root / "collections" / f"{run.id}.json").read_text())
    assert [i["source"] for i in manifest["items"]][-1] == agent.url
    assert not list(store.root.rglob("*.tmp*"))  # atomic writes leave no temporary file


def test_broken_sources_are_one_line_each_and_lose_nothing_else(
    tmp_path: Path, verdict_texts: dict[str, str], agent: Agent
) -> None:
    good = as_node(verdict_texts["healthy"], "n1")
    src = tmp_path / "in"
    write(src, "a-good.json", good)
    write(src, "b-cut.json", good[: len(good) // 2])
    write(src, "c-junk.json", "<html>gateway timeout</html>")
    os.mkfifo(src / "d-fifo.json")  # would block a naive open() for ever
    agent.routes["/v1/verdict/latest"] = (
        503,
        b'{"ready": false, "reason": "no verdict yet"}',
    )
    dead = f"http://127.0.0.1:{_dead_port()}"
    store = FleetStore(tmp_path / "fleet")
    run = collect([str(src), agent.url, dead, str(tmp_path / "nope"), "ftp://x/y"], store)
    assert [i.node for i in run.stored] == ["n1"]
    errors = {
        Path(i.source).name if "://" not in i.source else i.source: i.error for i in run.failed
    }
    assert "cut off (truncated JSON)" in str(errors["b-cut.json"])
    assert "not JSON" in str(errors["c-junk.json"])
    assert "unreadable" in str(errors["d-fifo.json"])
    assert "HTTP 503" in str(errors[agent.url]) and "no verdict yet" in str(errors[agent.url])
    assert "no answer" in str(errors[dead]) and "dolmen serve" in str(errors[dead])
    assert "no such file" in str(errors["nope"])
    assert "unsupported URL scheme" in str(errors["ftp://x/y"])
    assert all("\n" not in str(e) for e in errors.values())
    # what was not a verdict is kept to look at
    kept = sorted(p.read_bytes() for p in (store.root / "rejected").iterdir())
    assert b"<html>gateway timeout</html>" in kept and good[: len(good) // 2].encode() in kept


def test_a_node_seen_twice_is_stored_twice_and_the_later_run_is_its_verdict(
    tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    older = json.loads(as_node(verdict_texts["xid79"], "n1"))
    newer = json.loads(as_node(verdict_texts["healthy"], "n1"))
    older["started"], newer["started"] = "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z"
    a = write(tmp_path, "new.json", json.dumps(newer))
    b = write(tmp_path, "old.json", json.dumps(older))
    store = FleetStore(tmp_path / "fleet")
    run = collect([str(a), str(b)], store)
    assert len(run.stored) == 2 and len(store.history("n1")) == 2
    assert run.notes and "n1 came 2 times" in run.notes[0]
    latest, problems = store.latest()
    assert latest["n1"].doc["status"] == "healthy" and not problems


def test_history_is_kept_and_the_newest_collection_wins(
    tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    store = FleetStore(tmp_path / "fleet")
    f = write(tmp_path, "n1.json", as_node(verdict_texts["healthy"], "n1"))
    collect([str(f)], store, collection="20261201T100000.000000Z")
    f.write_text(as_node(verdict_texts["xid79"], "n1"))
    collect([str(f)], store, collection="20261201T110000.000000Z")
    assert [p.stem for p in store.history("n1")] == [
        "20261201T100000.000000Z",
        "20261201T110000.000000Z",
    ]
    latest, _ = store.latest()
    assert latest["n1"].doc["status"] == "unhealthy"
    # a damaged newest file: the older one stands in, and the report says so
    store.history("n1")[-1].write_text("{")
    latest, problems = store.latest()
    assert latest["n1"].collection == "20261201T100000.000000Z"
    assert len(problems) == 1 and "cut off" in problems[0]


def test_cli_collect_prints_one_line_per_source_and_exits_2_on_a_failure(
    tmp_path: Path, verdict_texts: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path, "n1.json", as_node(verdict_texts["healthy"], "n1"))
    bad = write(tmp_path, "bad.json", "{")
    fleet = tmp_path / "fleet"
    assert main(["fleet", "collect", str(good), "-o", str(fleet)]) == 0
    out, _ = capsys.readouterr()
    assert "1 verdict(s) stored" in out
    assert main(["fleet", "collect", str(good), str(bad), "-o", str(fleet)]) == 2
    out, err = capsys.readouterr()
    assert f"{bad}: not a verdict: cut off" in err and "1 source(s) failed" in out


def test_cli_collect_refuses_a_store_whose_folder_does_not_exist(
    tmp_path: Path, verdict_texts: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path, "n1.json", as_node(verdict_texts["healthy"], "n1"))
    rc = main(["fleet", "collect", str(good), "-o", str(tmp_path / "no" / "such")])
    _, err = capsys.readouterr()
    assert rc != 0 and "does not exist" in err and err.count("\n") <= 2


def test_a_file_where_the_store_should_be_is_refused(
    tmp_path: Path, verdict_texts: dict[str, str]
) -> None:
    from dolmen.errors import InputError

    good = write(tmp_path, "n1.json", as_node(verdict_texts["healthy"], "n1"))
    (tmp_path / "fleet").write_text("someone's file")
    with pytest.raises(InputError, match="is not a folder"):
        collect([str(good)], FleetStore(tmp_path / "fleet"))
    assert (tmp_path / "fleet").read_text() == "someone's file"


def test_a_store_that_cannot_be_written_is_fsutils_one_line() -> None:
    from dolmen.errors import UsageError

    # /proc is there but takes no new folder (ENOENT): bad input, not "free space"
    root = Path(f"/proc/dolmen-fleet-test-{os.getpid()}")
    with pytest.raises(UsageError) as e:
        FleetStore(root).add("20260101T000000.000000Z", "node-1", b"{}")
    assert e.value.message.startswith(f"fleet store {root}/nodes/node-1/")
    assert "could not write: /proc cannot hold new files" in e.value.message
    assert not root.exists()
