"""The layer contracts in pyproject.toml name every package of dolmen.

`make lint` runs import-linter on them (STYLE.md rule 22); a package the contracts do not
name would escape both, so a new top-level module or package fails here until it is given
its place in the table (and in docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path

from dolmen.compat import tomllib

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "dolmen"


def contracts() -> list[dict[str, object]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    found: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return found


def top_level() -> set[str]:
    names = {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    return {f"dolmen.{n}" for n in names}


def test_every_package_has_a_layer() -> None:
    layers = next(c for c in contracts() if c["type"] == "layers")
    assert isinstance(layers["layers"], list)
    named = {m.strip() for row in layers["layers"] for m in row.replace(":", "|").split("|")}
    assert top_level() == named


def test_every_package_but_host_is_barred_from_the_machine() -> None:
    forbidden = next(c for c in contracts() if c["type"] == "forbidden")
    assert isinstance(forbidden["source_modules"], list)
    assert set(forbidden["source_modules"]) == top_level() - {"dolmen.host"}
    assert {"subprocess", "ctypes", "pynvml"} <= set(forbidden["forbidden_modules"])  # type: ignore[arg-type]
