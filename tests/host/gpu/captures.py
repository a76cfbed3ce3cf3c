"""Sections of the nvidia_gpu_exporter multi-command captures (../shared/recordings)."""

from __future__ import annotations

import re

from tests.conftest import recording, recordings_in

CAPTURES = "nvidia-smi-captures/"
_BANNER = re.compile(r"^#{20,}\n# (\w+) :: .*\n# \$ (.*)\n#{20,}\n", re.M)


def capture_section(name: str, state: str, command: str) -> str:
    """The output of ``command`` (``nvidia-smi -q``, ``nvidia-smi``) in the ``state``
    (``idle``/``load``) part of capture ``name``; skips when the recordings are absent."""
    text = recording(CAPTURES + name).read_text()
    parts = _BANNER.split(text)
    for i in range(1, len(parts) - 2, 3):
        if parts[i] == state and parts[i + 1].strip() == command:
            return parts[i + 2]
    raise AssertionError(f"{name} has no {state} section for {command!r}")


def capture_names() -> list[str]:
    """Every capture file (for parametrize); [] when ../shared is absent."""
    return [p.name for p in recordings_in(CAPTURES.rstrip("/"), "*.txt")]
