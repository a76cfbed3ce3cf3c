"""Options and helpers shared by the command modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def from_option(f: F) -> F:
    """``--from PATH``: read a host tree or snapshot instead of the live host."""
    return click.option(
        "--from",
        "source",
        metavar="PATH",
        default=None,
        help="Read a host tree folder or a snapshot .tar.gz instead of this host.",
    )(f)


def config_option(f: F) -> F:
    """``--config FILE``: the site configuration (default /etc/dolmen/dolmen.toml)."""
    return click.option(
        "--config",
        "config_path",
        metavar="FILE",
        default=None,
        help="Site configuration file (default: $DOLMEN_CONFIG_DIR or /etc/dolmen/dolmen.toml).",
    )(f)
