"""Real kernel writes where they cannot harm the machine: network sysctls inside a network
namespace this test creates and deletes (net.* values are per namespace)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tune.netns import in_ns, private_netns, tune_env

pytestmark = pytest.mark.netns

# Per-namespace values of ai-training-multinode, and one that a namespace may not set.
PROFILE = """\
[profile]
description = "network values inside a test namespace"
persist = false
[sysctl]
"net.ipv4.tcp_rmem" = "4096 87380 268435456"
"net.ipv4.tcp_wmem" = "4096 65536 268435456"
"net.ipv4.tcp_max_syn_backlog" = 8192
"net.core.somaxconn" = 8192
"net.ipv4.tcp_slow_start_after_idle" = 0
"net.ipv4.conf.all.arp_announce" = 2
"net.core.rmem_max" = 536870912
"""
KEYS = [
    "net/ipv4/tcp_rmem",
    "net/ipv4/tcp_wmem",
    "net/ipv4/tcp_max_syn_backlog",
    "net/core/somaxconn",
    "net/ipv4/tcp_slow_start_after_idle",
    "net/ipv4/conf/all/arp_announce",
]


@pytest.fixture
def netns() -> Iterator[str]:
    with private_netns(f"dolmen-tune-test-{os.getpid()}") as name:
        yield name


def values(ns: str | None) -> dict[str, str]:
    """The KEYS as the kernel prints them, inside ``ns`` or in this namespace."""
    if ns is None:
        return {k: (Path("/proc/sys") / k).read_text() for k in KEYS}
    got = in_ns(ns, "cat", *[f"/proc/sys/{k}" for k in KEYS])
    return dict(zip(KEYS, [line + "\n" for line in got.stdout.splitlines()], strict=True))


def test_apply_verify_rollback_in_a_network_namespace(
    netns: str, dolmen_dirs: Path, tmp_path: Path
) -> None:
    (dolmen_dirs / "profiles" / "netns-net.toml").write_text(PROFILE)
    env = tune_env(tmp_path / "state", dolmen_dirs)
    tune = [sys.executable, "-m", "dolmen.cli.main", "tune"]
    outside, originals = values(None), values(netns)

    applied = in_ns(netns, *tune, "apply", "netns-net", "--root", "/", "--yes", "--json", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    now = values(netns)
    assert now["net/ipv4/tcp_rmem"] == "4096\t87380\t268435456\n"
    assert now["net/core/somaxconn"] == "8192\n"
    assert values(None) == outside  # the machine's own namespace is untouched
    planned = in_ns(netns, *tune, "plan", "netns-net", "--root", "/", "--json", env=env)
    rmem = [
        c
        for c in json.loads(planned.stdout)["changes"]
        if c["target"]["key"] == "net.core.rmem_max"
    ]
    assert rmem[0]["action"] == "skip" and "initial network namespace" in rmem[0]["reason"]

    assert in_ns(netns, *tune, "verify", "--root", "/", env=env).returncode == 0
    in_ns(netns, "sh", "-c", "echo 1234 > /proc/sys/net/core/somaxconn")
    assert in_ns(netns, *tune, "verify", "--root", "/", env=env).returncode == 1

    back = in_ns(netns, *tune, "rollback", "--root", "/", "--yes", "--json", env=env)
    assert back.returncode == 0, back.stderr
    doc = json.loads(back.stdout)
    assert [r["target"] for r in doc["restored"] if r["changed_by_others"]] == [
        "net.core.somaxconn"
    ]
    assert all(r["exact"] for r in doc["restored"])
    assert values(netns) == originals

    # a real SIGKILL in the middle of a real kernel apply, then the next run rolls it back
    killed = in_ns(
        netns,
        *tune,
        "apply",
        "netns-net",
        "--root",
        "/",
        "--yes",
        env={**env, "DOLMEN_TUNE_CRASH_AT": "6"},
    )
    assert killed.returncode == -9
    assert values(netns) != originals
    rec = in_ns(netns, *tune, "recover", "--rollback", "--root", "/", env=env)
    assert rec.returncode == 0, rec.stderr
    assert values(netns) == originals
