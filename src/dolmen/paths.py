"""Where dolmen keeps its configuration and its state (DESIGN.md, "Where dolmen keeps things")."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_CONFIG_DIR = Path("/etc/dolmen")
DEFAULT_STATE_DIR = Path("/var/lib/dolmen")


def config_dir() -> Path:
    """The configuration folder: ``$DOLMEN_CONFIG_DIR`` or /etc/dolmen."""
    return Path(os.environ.get("DOLMEN_CONFIG_DIR") or DEFAULT_CONFIG_DIR)


def state_dir() -> Path:
    """The state folder (journals, audit log, jobs): ``$DOLMEN_STATE_DIR`` or /var/lib/dolmen."""
    return Path(os.environ.get("DOLMEN_STATE_DIR") or DEFAULT_STATE_DIR)
