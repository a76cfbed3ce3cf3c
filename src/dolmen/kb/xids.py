"""The Xid / SXid catalogue: what each NVIDIA driver error number means and what to do.

Data: ``kb/data/xids.toml`` (NVIDIA's Xid catalogue and NVSentinel's mapping,
Fabric Manager's SXid tables, and the other kernel-log events dolmen explains),
a ``source`` on every row. ``load_xids()`` builds it once (from kb/prebuilt.py,
generated from the file); ``lookup(xid)`` gives a row; ``assess(...)`` turns one
kernel-log event into a severity and an action, applying the rules a row cannot
hold alone (the line's own Fatal/Non-fatal word, Xid 154's new recovery action,
unknown numbers).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from dolmen.frozen import frozen
from dolmen.kb.datafile import Field, KbDataError, read_tables

FILENAME = "xids.toml"
SEVERITIES = ("info", "warn", "critical")
ACTIONS = (
    "none",
    "restart_app",
    "reset_gpu",
    "reboot",
    "drain_and_service",
    "check_nvlink",
    "follow_recovery_action",
)
# Events without an Xid number may also point at the link or the PCIe slot.
EVENT_ACTIONS = (*ACTIONS, "check_link", "check_pcie")

_ROW = {
    "name": Field(str),
    "meaning": Field(str, True),
    "severity": Field(str, True),
    "action": Field(str, True),
    "line_fatality": Field(bool),
}
SCHEMA: Mapping[str, Mapping[str, Field]] = {
    "xid": {"xid": Field(int, True), **_ROW},
    "sxid": {"sxid": Field(int, True), **_ROW},
    "event": {"kind": Field(str, True), **_ROW},
}


@frozen
class XidEntry:
    """One catalogue row: an Xid, an SXid (``kind``) or a kernel-log event without a number.

    ``line_fatality``: the log line's own "Fatal" / "Non-fatal" word decides between
    critical and warn (NVLink5 Xids, SXids, PCIe AER).
    """

    kind: str  # "xid" | "sxid" | an event kind ("fell_off_bus", "ib_flap", ...)
    code: int | None
    name: str
    meaning: str
    severity: str
    action: str
    note: str
    source: str
    verified: bool = True
    unverified: tuple[str, ...] = ()
    line_fatality: bool = False


@frozen
class Assessment:
    """What one event means for the node: severity, action, meaning, and the row it came from."""

    severity: str
    action: str
    meaning: str
    entry: XidEntry | None  # None: the number is not in the catalogue

    @property
    def known(self) -> bool:
        """Whether the catalogue has a row for the event."""
        return self.entry is not None


@frozen
class XidCatalogue:
    """The loaded catalogue: Xids and SXids by number, other events by kind."""

    xids: Mapping[int, XidEntry]
    sxids: Mapping[int, XidEntry]
    events: Mapping[str, XidEntry]

    def lookup(self, xid: int) -> XidEntry | None:
        """The row of an Xid number, or None when the catalogue does not list it."""
        return self.xids.get(xid)

    def lookup_sxid(self, sxid: int) -> XidEntry | None:
        """The row of an NVSwitch SXid number, or None."""
        return self.sxids.get(sxid)

    def event(self, kind: str) -> XidEntry | None:
        """The row of a kernel-log event kind without a number (``fell_off_bus``...), or None."""
        return self.events.get(kind)

    def assess(
        self,
        kind: str,
        code: int | None = None,
        *,
        fatal: bool | None = None,
        recovery: int | None = None,
    ) -> Assessment:
        """Severity and action of one event.

        ``fatal``: the line's own word (True "Fatal", False "Non-fatal"); it raises a
        line-fatality row to critical or caps it at warn. ``recovery``: the new action
        code of an Xid 154 line (0 = None). An Xid or SXid the catalogue lacks is
        ``warn`` (critical when its line says Fatal): dolmen cannot tell more.
        """
        if kind == "xid" and code is not None:
            entry = self.lookup(code)
        elif kind == "sxid" and code is not None:
            entry = self.lookup_sxid(code)
        else:
            entry = self.event(kind)
        if entry is None:
            severity = "critical" if fatal else "warn"
            label = f"SXid {code}" if kind == "sxid" else f"Xid {code}" if code else kind
            return Assessment(severity, "none", f"{label}: not in dolmen's catalogue", None)
        severity = entry.severity
        action = entry.action
        if entry.line_fatality and fatal is not None:
            if fatal:
                severity = "critical"
            elif severity == "critical":
                severity = "warn"
        if kind == "xid" and code == 154 and recovery is not None:
            # The GPU names its new recovery action; 0 means the need for action is gone.
            severity = "info" if recovery == 0 else "critical"
            action = "none" if recovery == 0 else action
        return Assessment(severity, action, entry.meaning, entry)


def parse_xids(text: str | None = None) -> XidCatalogue:
    """The catalogue from ``xids.toml`` (or ``text``); raises KbDataError on a bad row."""
    tables = read_tables(FILENAME, SCHEMA, text=text)
    xids = _index(tables["xid"], "xid", ACTIONS)
    sxids = _index(tables["sxid"], "sxid", ACTIONS)
    events: dict[str, XidEntry] = {}
    for row in tables["event"]:
        entry = _entry(row, str(row["kind"]), None, EVENT_ACTIONS)
        if entry.kind in events:
            raise KbDataError(f"[[event]] kind {entry.kind!r} is listed twice", path=FILENAME)
        events[entry.kind] = entry
    return XidCatalogue(xids=xids, sxids=sxids, events=events)


@lru_cache(maxsize=1)
def load_xids() -> XidCatalogue:
    """The packaged catalogue, built once per process from kb/prebuilt.py (generated from
    xids.toml by ``python -m dolmen.kb``)."""
    from dolmen.kb import prebuilt

    return prebuilt.xids()


def _index(rows: list[dict[str, Any]], table: str, actions: tuple[str, ...]) -> dict[int, XidEntry]:
    out: dict[int, XidEntry] = {}
    for row in rows:
        code = int(row[table])
        if code in out:
            raise KbDataError(f"[[{table}]] {code} is listed twice", path=FILENAME)
        out[code] = _entry(row, table, code, actions)
    return out


def _entry(
    row: Mapping[str, Any], kind: str, code: int | None, actions: tuple[str, ...]
) -> XidEntry:
    where = f"[[event]] {kind}" if code is None else f"[[{kind}]] {code}"
    severity, action = str(row["severity"]), str(row["action"])
    if severity not in SEVERITIES:
        raise KbDataError(
            f"{where}: severity {severity!r}; valid: {', '.join(SEVERITIES)}", path=FILENAME
        )
    if action not in actions:
        raise KbDataError(f"{where}: action {action!r}; valid: {', '.join(actions)}", path=FILENAME)
    return XidEntry(
        kind=kind,
        code=code,
        name=str(row.get("name", "")),
        meaning=str(row["meaning"]),
        severity=severity,
        action=action,
        note=str(row.get("note", "")),
        source=str(row["source"]),
        verified=bool(row.get("verified", True)),
        unverified=tuple(str(u) for u in row.get("unverified", ())),
        line_fatality=bool(row.get("line_fatality", False)),
    )
