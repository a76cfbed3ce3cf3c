"""The ``lab`` fixture: the namespace cluster (tests/net/prove/cluster.py), once per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dolmen.net.model import load_policy
from dolmen.net.prove import Endpoint
from tests.net.prove.cluster import cluster
from tests.net.prove.lab import POLICY, Lab


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    path = tmp_path_factory.mktemp("net") / "policy.toml"
    path.write_text(POLICY)
    with cluster() as c:
        endpoints = [
            Endpoint(n.name, n.address, ("ip", "netns", "exec", n.netns)) for n in c.nodes.values()
        ]
        yield Lab(c, load_policy(path), path, endpoints)
