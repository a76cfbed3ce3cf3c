"""RDMA adapters (HCAs): the family of a part number, and the fastest rate a port reaches.

Data: ``kb/data/hcas.toml``, keyed by the part number the tools print (``MT4129``; sysfs
``hca_type``, ibstat ``CA type``, ibv_devinfo ``vendor_part_id``). ``max_gbps`` is a
ceiling (the family's top SKU), never the rate a given port must reach.
"""

from __future__ import annotations

from dolmen.frozen import frozen
from dolmen.kb.datafile import Field, KbDataError, read_tables

FILENAME = "hcas.toml"


@frozen
class HcaModel:
    """One adapter family."""

    id: str  # "MT4129"
    name: str  # "ConnectX-7"
    max_gbps: float
    source: str
    verified: bool = True
    unverified: tuple[str, ...] = ()
    note: str = ""


@frozen
class HcaTable:
    """Every adapter of ``hcas.toml``, in data-file order."""

    models: tuple[HcaModel, ...]

    def get(self, part: str | None) -> HcaModel | None:
        """The family of ``MT4129`` (or ``4129``); None when unknown."""
        if not part:
            return None
        key = part.strip().upper()
        key = key if key.startswith("MT") else f"MT{key}"
        return next((m for m in self.models if m.id == key), None)


_SCHEMA = {
    "hca": {
        "id": Field(str, True),
        "name": Field(str, True),
        "max_gbps": Field((int, float), True),
    }
}


def load_hcas(text: str | None = None) -> HcaTable:
    """Load and validate ``hcas.toml`` (or ``text``, for tests)."""
    rows = read_tables(FILENAME, _SCHEMA, text=text)["hca"]
    out: list[HcaModel] = []
    for i, row in enumerate(rows, start=1):
        where = f"[[hca]] row {i} (id={row['id']!r})"
        if not row["id"].startswith("MT") or not row["id"][2:].isdigit():
            raise KbDataError(f"{where}: 'id' must be a part number like MT4129", path=FILENAME)
        if any(m.id == row["id"] for m in out):
            raise KbDataError(f"{where}: duplicate id", path=FILENAME)
        if not 0 < row["max_gbps"] <= 3200:
            raise KbDataError(
                f"{where}: 'max_gbps' must be above 0 and at most 3200", path=FILENAME
            )
        out.append(
            HcaModel(
                id=row["id"],
                name=row["name"],
                max_gbps=float(row["max_gbps"]),
                source=row["source"],
                verified=row.get("verified", True),
                unverified=tuple(row.get("unverified", ())),
                note=row.get("note", ""),
            )
        )
    return HcaTable(tuple(out))
