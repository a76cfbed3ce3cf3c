"""Helpers of the packaging tests: where the artifacts are, a free loopback port, the
dolmen of this checkout as a program other programs can run (units, scripts, containers)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging"


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1 (the kernel picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dolmen_program(folder: Path) -> Path:
    """An executable ``dolmen`` that runs this checkout's source with this Python, as the
    /opt/dolmen/bin/dolmen of an installed virtualenv would."""
    prog = folder / "dolmen"
    prog.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH={REPO / 'src'} exec {sys.executable} -c "
        "'import sys; from dolmen.cli.main import main; sys.exit(main(sys.argv[1:]))' \"$@\"\n"
    )
    prog.chmod(0o755)
    return prog
