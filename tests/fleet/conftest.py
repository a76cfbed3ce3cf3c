"""Verdict documents of real runs, once per session: dolmen's sample bundles (``dolmen
demo``) validated as ``dolmen validate --json`` would print them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.demo import build_sample
from dolmen.host.tree import TreeHost
from dolmen.report.json import render_json

SAMPLES = {"healthy": "hgx-h100", "xid79": "hgx-h100-xid79", "remap": "hgx-h100-remap"}


@pytest.fixture(scope="session")
def verdict_texts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Sample name -> the verdict JSON text of its bundle (level quick)."""
    root = tmp_path_factory.mktemp("samples")
    out = {}
    for key, name in SAMPLES.items():
        tree = build_sample(name, root / name)
        out[key] = render_json(validate(TreeHost(tree), level=Level.QUICK))
    return out


def as_node(text: str, node: str, **edits: Any) -> str:
    """The verdict renamed to ``node``, with inventory edits ``section.key=value``."""
    doc = json.loads(text)
    doc = copy.deepcopy(doc)
    doc["host"] = node
    for path, value in edits.items():
        section, key = path.split("__")
        doc["inventory"][section][key] = value
    return json.dumps(doc, indent=2)


def write(folder: Path, name: str, text: str) -> Path:
    """A verdict file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path
