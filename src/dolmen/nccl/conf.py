"""/etc/nccl.conf: NCCL's own configuration file, merged with the computed values: pure.

NCCL reads ``/etc/nccl.conf`` (then ``~/.nccl.conf``) at init, one ``NAME=VALUE`` per
line, ``#`` comments; it sets each with ``setenv(name, value, 0)``: a variable already
in the environment wins, and within the file the first line of a name wins. So the
merge keeps the site's other lines as they are, comments out the site's lines for the
names dolmen sets (they would shadow dolmen's), and writes dolmen's values in one
marked block at the top, each under its reason. Writing it again replaces the block.
"""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.values.text import printable

BEGIN = "# >>> dolmen nccl env --write: the NCCL environment of this fabric"
END = "# <<< dolmen nccl env"
REPLACED = "# (replaced by dolmen nccl env) "


def parse_conf(text: str) -> dict[str, str]:
    """The variables a nccl.conf sets, as NCCL reads them (the first line of a name wins)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if sep and name.strip():
            out.setdefault(name.strip(), value.strip())
    return out


def merged(existing: str | None, values: Mapping[str, str], why: Mapping[str, str]) -> str:
    """The file with dolmen's block for ``values`` (see module docstring)."""
    kept: list[str] = []
    inside = False
    for line in (existing or "").splitlines():
        if line == BEGIN:
            inside = True
            continue
        if inside:
            inside = line != END
            continue
        name = line.partition("=")[0].strip()
        if "=" in line and not line.lstrip().startswith("#") and name in values:
            kept.append(REPLACED + line)
        else:
            kept.append(line)
    block = [BEGIN]
    for name, value in values.items():
        block.append(printable(f"# {why.get(name, '')}".rstrip()))  # one line, always
        block.append(f"{name}={value}")
    block.append(END)
    body = "\n".join(block + kept).rstrip("\n")
    return body + "\n"
