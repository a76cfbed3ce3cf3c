"""A reader for systemd unit files: sections of ``Key=Value`` lines, a key repeated as
systemd allows (``Environment=``, ``After=``), comments and continuation lines. Python's
configparser refuses repeated keys, which systemd's own parser accepts."""

from __future__ import annotations

from pathlib import Path

Unit = dict[str, dict[str, list[str]]]


def parse_unit(text: str) -> Unit:
    """Sections -> key -> every value in file order. A line outside a section, or without
    ``=``, raises ValueError naming it (systemd would ignore it with a warning)."""
    out: Unit = {}
    section: dict[str, list[str]] | None = None
    pending = ""
    for n, raw in enumerate(text.splitlines(), 1):
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = out.setdefault(line[1:-1], {})
            continue
        if section is None or "=" not in line:
            raise ValueError(f"line {n}: not a key in a section: {raw!r}")
        key, value = line.split("=", 1)
        section.setdefault(key.strip(), []).append(value.strip())
    return out


def load_unit(path: Path) -> Unit:
    return parse_unit(path.read_text())


def one(unit: Unit, section: str, key: str) -> str:
    """The single value of ``key``; fails when it is absent or given twice."""
    values = unit[section][key]
    assert len(values) == 1, f"{section}.{key} is set {len(values)} times"
    return values[0]
