"""``dolmen serve --host-root DIR`` (or DOLMEN_HOST_ROOT): the live agent reading a node's
files under DIR, as the agent in a container reads the node's / mounted at /host. Here DIR
is a host tree: its files are read (host name, OS, CPUs, PCI), its recorded commands are
not (commands run on the machine the agent runs on: the container's driver root gives
nvidia-smi there, tests/packaging/test_container.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dolmen.errors import InputError
from dolmen.host import open_live
from tests.serve.conftest import dolmen


def test_the_live_host_reads_files_under_its_root(xid79: Path) -> None:
    with open_live(xid79) as host:
        assert host.kind == "live" and host.root == xid79
        assert host.hostname == "h100-node-01"  # the node's etc/hostname, not this machine's
        assert host.read_value("proc/sys/kernel/osrelease") == (
            (xid79 / "proc/sys/kernel/osrelease").read_text().strip()
        )
        assert host.describe()["root"] == str(xid79)
    with open_live("/") as host:
        assert str(host.root) == "/"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        ("missing", "no such folder"),
        ("file", "a regular file, not a folder"),
        ("fifo", "a FIFO, not a folder"),
        ("empty", "no proc/, sys/ or etc/ under it"),
    ],
)
def test_a_root_that_is_not_a_mounted_node_is_refused(tmp_path: Path, make: str, says: str) -> None:
    root = tmp_path / "host"
    if make == "file":
        root.write_text("x")
    elif make == "fifo":
        os.mkfifo(root)
    elif make == "empty":
        root.mkdir()
    with pytest.raises(InputError, match="--host-root") as got:
        open_live(root)
    assert f"--host-root: {says}" in got.value.message
    assert "-v /:/host:ro" in (got.value.hint or "")


def test_the_command_line_refuses_before_listening(home: Path, xid79: Path) -> None:
    done = dolmen(home, "serve", "--host-root", str(home / "nowhere"))
    assert done.returncode == 2 and "--host-root: no such folder" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2  # the line and its hint
    done = dolmen(home, "serve", "--from", str(xid79), DOLMEN_HOST_ROOT=str(xid79))
    assert done.returncode == 2 and "name two hosts" in done.stderr


def test_from_the_environment_the_agent_serves_the_nodes_verdict(
    serve: Any, home: Path, xid79: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOLMEN_HOST_ROOT", str(xid79))  # env_for copies os.environ
    s = serve("--interval", "1h")
    s.wait(seconds=120)
    doc = s.client.get("/v1/verdict/latest").json()
    assert doc["host"] == "h100-node-01"
    assert doc["source"] == {"kind": "live", "root": str(xid79), "hostname": "h100-node-01"}
    tree_os = (xid79 / "etc/os-release").read_text()
    assert f'PRETTY_NAME="{doc["inventory"]["host"]["os"]}"' in tree_os
    facts = s.client.get("/v1/facts", params={"only": "cpu"}).json()
    assert json.dumps(facts["host"]) == json.dumps(doc["source"])
    assert "--host-root" not in s.logs() and str(xid79) in s.logs()
