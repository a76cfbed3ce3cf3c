"""Whether a Slurm cluster runs container jobs through pyxis (NVIDIA's SPANK plugin).

Two sources, either one enough: ``srun --help`` lists ``--container-image`` when the
plugin loaded (srun reads plugstack.conf itself, so this is the authoritative one), and
a plugstack.conf that names ``spank_pyxis.so``. ``srun --help`` that ran and lists no
container option is a real "no"; a help that could not be run is not (``None``: the
caller says which source was missing instead of guessing).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dolmen.errors import UsageError

if TYPE_CHECKING:
    from dolmen.host import Host
    from dolmen.slurm.client import SlurmClient

# Where plugstack.conf lives: next to slurm.conf (SLURM_CONF's folder), then the packages'.
PLUGSTACK = ("etc/slurm/plugstack.conf", "etc/slurm-llnl/plugstack.conf")
_HELP = re.compile(r"^\s*--container-image[=\s]", re.M)
_PLUGIN = re.compile(r"^\s*(required|optional)\s+\S*pyxis\S*\.so\b", re.M)
_INCLUDE = re.compile(r"^\s*include\s+(\S+)", re.M)


def in_help(text: str) -> bool:
    """True when ``srun --help`` output lists pyxis's ``--container-image``."""
    return bool(_HELP.search(text))


def in_plugstack(text: str) -> bool:
    """True when a plugstack.conf text loads pyxis (a ``required``/``optional`` line
    naming ``spank_pyxis.so``; comments ignored)."""
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    return bool(_PLUGIN.search("\n".join(lines)))


def includes(text: str) -> list[str]:
    """The ``include`` globs of a plugstack.conf (``include /etc/slurm/plugstack.conf.d/*``)."""
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    return _INCLUDE.findall("\n".join(lines))


def detect(client: SlurmClient, host: Host) -> tuple[bool | None, str]:
    """(has pyxis, the source that said so); None with what was missing when neither
    source could be read."""
    res = client.run(["srun", "--help"], timeout=15)
    if res.ok and in_help(res.stdout + res.stderr):
        return True, "srun --help lists --container-image"
    conf = client.env.get("SLURM_CONF") or host.environ().get("SLURM_CONF")
    places = [f"{conf.rsplit('/', 1)[0].lstrip('/')}/plugstack.conf"] if conf else []
    for rel in (*places, *PLUGSTACK):
        text = host.read_opt(rel)
        if text is None:
            continue
        found = [text] + [host.read_opt(p) or "" for g in includes(text) for p in host.glob(g)]
        if any(in_plugstack(t) for t in found):
            return True, f"/{rel} loads spank_pyxis.so"
    if res.ok:
        return False, "srun --help lists no --container-image"
    return None, f"srun --help failed ({res.failure()}) and no plugstack.conf names pyxis"


def require(client: SlurmClient, host: Host, known: bool | None = None) -> None:
    """Refuse (UsageError, one line) an image job on a cluster without pyxis, or one
    where neither source could be read; ``known`` is the site's own answer."""
    found, source = (known, "the backend's pyxis option") if known is not None else (None, "")
    if found is None:
        found, source = detect(client, host)
    if found is None:
        raise UsageError(
            f"--image needs pyxis, and whether this cluster has it is unknown: {source}",
            hint="run where srun works, or leave out --image",
        )
    if not found:
        raise UsageError(
            f"--image needs the pyxis SPANK plugin, which this cluster lacks ({source})",
            hint="leave out --image to run on the nodes' own software, or install pyxis"
            " and enroot (github.com/NVIDIA/pyxis)",
        )
