"""``dolmen net plan|apply|verify|rollback``: the nftables target (docs/net.md)."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Add the nftables commands to ``group``."""
