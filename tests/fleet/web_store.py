"""A fleet store for the dashboard tests: three nodes (healthy, an Xid 79, a row-remap
failure) and a hostile summary that must show as text, never run."""

from __future__ import annotations

import json
from pathlib import Path

from dolmen.fleet.collect import collect
from dolmen.fleet.store import FleetStore
from tests.fleet.conftest import as_node, write

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned=2">'


def make_store(root: Path, verdict_texts: dict[str, str]) -> Path:
    """The store folder (one collection)."""
    src = root / "in"
    write(src, "n1.json", as_node(verdict_texts["healthy"], "n1"))
    write(src, "n2.json", as_node(verdict_texts["xid79"], "n2"))
    remap = json.loads(as_node(verdict_texts["remap"], "n3"))
    bad = next(f for f in remap["findings"] if f["status"] == "fail")
    bad["summary"] = HOSTILE + " " + bad["summary"]
    write(src, "n3.json", json.dumps(remap))
    write(src, "cut.json", "{")
    fleet = root / "fleet"
    collect([str(src)], FleetStore(fleet))
    return fleet
