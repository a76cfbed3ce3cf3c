"""``rdma system show`` parsed (dolmen.net.rdma), and read from trees and this machine.

The forms are iproute2's (rdma/sys.c) across its releases; this machine's kernel has no
RDMA, so the live run is the real "Failed to open NETLINK_RDMA socket" case.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.host.live import LiveHost
from dolmen.host.tree import TreeHost
from dolmen.net.rdma import parse_rdma_system, read_netns_mode
from tests.conftest import make_tree

CMD = "rdma system show"


@pytest.mark.parametrize(
    ("text", "netns"),
    [
        ("netns shared\n", "shared"),  # iproute2 5.3
        ("netns exclusive copy-on-fork on\n", "exclusive"),  # 5.12
        ("netns shared privileged-qkey off copy-on-fork on\n", "shared"),  # 6.7
        ("\nnetns exclusive privileged-qkey on copy-on-fork on\n\n", "exclusive"),
        ("", None),  # nothing
        ("netns\n", None),  # truncated
        ("netns shared copy-on-fork\n", None),  # truncated pair
        ("netns maybe\n", None),  # unknown mode
        ("copy-on-fork on\n", None),  # no netns word
        ("netns shared\nnetns exclusive\n", None),  # two answers
        ("\x1b[31mnetns shared\x1b[0m\n", None),  # escape codes
        ("Failed to open NETLINK_RDMA socket\n", None),
    ],
)
def test_parse(text: str, netns: str | None) -> None:
    attrs = parse_rdma_system(text)
    assert (attrs or {}).get("netns") == netns


@pytest.mark.parametrize(
    ("command", "mode", "why"),
    [
        ("netns exclusive copy-on-fork on\n", "exclusive", "netns exclusive"),
        ("netns shared\n", "shared", "netns shared"),
        (("", 1, "Failed to open NETLINK_RDMA socket\n"), None, "this kernel has no RDMA"),
        (("", 255, "error: Operation not permitted\n"), None, "command failed"),
        ("netns sometimes\n", None, "malformed"),
        (None, None, "not in this bundle"),  # a tree that never recorded it
    ],
)
def test_read(tmp_path: Path, command: object, mode: str | None, why: str) -> None:
    commands = {CMD: command} if command is not None else {}
    root = make_tree(tmp_path, commands=commands)  # type: ignore[arg-type]
    got, said = read_netns_mode(TreeHost(root))
    assert got == mode
    assert why in said


def test_this_machine() -> None:
    """The live host: a mode where the kernel has RDMA, else a reason, never a guess."""
    mode, said = read_netns_mode(LiveHost())
    if mode is None:
        assert said.startswith(("missing", "command failed", "insufficient")), said
    else:
        assert mode in ("shared", "exclusive")
