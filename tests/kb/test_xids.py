"""The Xid catalogue: coverage, a source on every row, agreement with NVIDIA's FATAL/NONFATAL
mapping, the rules of assess(), and broken data files refused with one clear line."""

from __future__ import annotations

import re

import pytest

from dolmen.kb.datafile import KbDataError
from dolmen.kb.xids import ACTIONS, EVENT_ACTIONS, SEVERITIES, XidCatalogue, load_xids, parse_xids

REQUIRED = [8, 13, 31, 32, 38, 43, 44, 45, 48, 56, 57, 58, 61, 62, 63, 64, 65, 68, 69, 73, 74, 79,
            80, 81, 92, 94, 95, 109, 110, 119, 120, 121, 122, 123, 140, 143, *range(144, 151),
            151, 154]  # fmt: skip
EVENT_KINDS = [
    "fell_off_bus", "ib_flap", "pcie_limited", "aer", "aer_corrected", "peermem", "api_mismatch",
    "link_up", "io_error", "panic", "oops", "oom_kill", "segfault", "file_max",
]  # fmt: skip


@pytest.fixture(scope="module")
def cat() -> XidCatalogue:
    return load_xids()


def test_required_xids_and_events_are_listed(cat: XidCatalogue) -> None:
    assert [x for x in REQUIRED if cat.lookup(x) is None] == []
    assert sorted(cat.events) == sorted(EVENT_KINDS)
    assert cat.lookup_sxid(22013) is not None and cat.lookup_sxid(12028) is not None
    assert cat.lookup(9999) is None and cat.lookup_sxid(1) is None


def test_every_row_is_sourced_and_valid(cat: XidCatalogue) -> None:
    rows = [*cat.xids.values(), *cat.sxids.values(), *cat.events.values()]
    for e in rows:
        assert e.source.strip() and e.meaning.strip()
        assert e.severity in SEVERITIES
        assert e.action in (EVENT_ACTIONS if e.kind in cat.events else ACTIONS)
        assert e.verified or e.unverified, f"{e.kind} {e.code}: say which fields are doubtful"
    assert all(e.name for e in [*cat.xids.values(), *cat.sxids.values()])


def test_severity_follows_nvidias_fatal_mapping(cat: XidCatalogue) -> None:
    """A row citing NVSentinel's FATAL is critical and NONFATAL is not, unless the row's note
    explains why dolmen departs from it (Xid 109: often an application fault)."""
    departures = set()
    for x, e in cat.xids.items():
        m = re.search(r"nvsentinel: [^;]*?\b(NONFATAL|FATAL)\b", e.source)
        assert m, f"Xid {x} cites NVSentinel's mapping"
        if (m[1] == "FATAL") != (e.severity == "critical"):
            departures.add(x)
            assert "NVIDIA" in e.note, f"Xid {x}: a departure from NVIDIA says so in the note"
    assert departures == {109}


@pytest.mark.parametrize(
    ("xid", "severity", "action"),
    [
        (48, "critical", "reset_gpu"),
        (63, "info", "none"),
        (64, "critical", "reset_gpu"),
        (79, "critical", "drain_and_service"),
        (92, "warn", "none"),
        (94, "warn", "restart_app"),
        (95, "critical", "reset_gpu"),
        (109, "warn", "restart_app"),
        (119, "critical", "reset_gpu"),
        (154, "warn", "follow_recovery_action"),
        (74, "critical", "check_nvlink"),
        (13, "warn", "restart_app"),
        (45, "info", "none"),
    ],
)
def test_key_rows(cat: XidCatalogue, xid: int, severity: str, action: str) -> None:
    e = cat.lookup(xid)
    assert e is not None and (e.severity, e.action) == (severity, action)


def test_notes_where_tools_disagree(cat: XidCatalogue) -> None:
    def note(x: int) -> str:
        e = cat.lookup(x)
        assert e is not None
        return e.note

    assert "remapped_rows" in note(63) and "pending" in note(63) and "failure" in note(63)
    assert "aznhc" in note(63) and "aznhc" in note(92)
    assert "ECC" in note(92) and "aggregate" in note(92)
    assert "reset the GPU if" in note(109)
    assert "Recovery Action" in note(154)


@pytest.mark.parametrize(
    ("kind", "code", "fatal", "recovery", "severity", "action"),
    [
        ("xid", 145, False, None, "warn", "check_nvlink"),  # the line said Nonfatal
        ("xid", 149, True, None, "critical", "check_nvlink"),
        ("xid", 13, True, None, "warn", "restart_app"),  # not a line-fatality row
        ("xid", 154, None, 0, "info", "none"),  # recovery back to None
        ("xid", 154, None, 4, "critical", "follow_recovery_action"),  # Drain and Reset
        ("xid", 154, None, None, "warn", "follow_recovery_action"),
        ("xid", 9999, None, None, "warn", "none"),  # unknown: cannot tell more
        ("sxid", 22013, False, None, "info", "none"),  # Non-fatal never raises
        ("sxid", 11001, False, None, "warn", "reboot"),  # Non-fatal caps a fatal row
        ("sxid", 22013, True, None, "critical", "none"),  # the line says Fatal
        ("sxid", 20034, True, None, "critical", "none"),  # unknown SXid, Fatal line
        ("aer_corrected", None, None, None, "info", "check_pcie"),
        # fatal or not, as validate's system.pcie_aer judges an uncorrectable error
        ("aer", None, False, None, "critical", "check_pcie"),
        ("aer", None, True, None, "critical", "check_pcie"),
        ("fell_off_bus", None, None, None, "critical", "drain_and_service"),
        ("ib_flap", None, None, None, "warn", "check_link"),
    ],
)
def test_assess(
    cat: XidCatalogue,
    kind: str,
    code: int | None,
    fatal: bool | None,
    recovery: int | None,
    severity: str,
    action: str,
) -> None:
    a = cat.assess(kind, code, fatal=fatal, recovery=recovery)
    assert (a.severity, a.action) == (severity, action)
    assert a.meaning
    assert a.known == (a.entry is not None)


def test_unknown_numbers_say_so(cat: XidCatalogue) -> None:
    a = cat.assess("xid", 9999)
    assert not a.known and "Xid 9999" in a.meaning and "not in" in a.meaning


ROW = """
[[xid]]
xid = 13
meaning = "m"
severity = "{severity}"
action = "{action}"
source = "{source}"
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (ROW.format(severity="fatal", action="none", source="s"), "severity 'fatal'"),
        (ROW.format(severity="warn", action="pray", source="s"), "action 'pray'"),
        (ROW.format(severity="warn", action="none", source=""), "empty source"),
        (ROW.format(severity="warn", action="none", source="s") * 2, "listed twice"),
        ('[[xid]]\nxid = 1\nmeaning = "m"\nseverity = "warn"\naction = "none"\n', "no source"),
        ("[[xid]]\nxid = 1\nbogus = 2\n", "unknown key 'bogus'"),
        ('[[event]]\nkind = "x"\nmeaning = "m"\nseverity = "warn"\naction = "check_link"\n'
         'source = "s"\n' * 2, "listed twice"),
        ("[[xid]\n", "not valid TOML"),
    ],
)  # fmt: skip
def test_broken_data_is_refused(text: str, message: str) -> None:
    with pytest.raises(KbDataError) as e:
        parse_xids(text)
    assert message in str(e.value) and "xids.toml" in str(e.value)


def test_event_actions_only_for_events() -> None:
    text = ROW.format(severity="warn", action="check_link", source="s")
    with pytest.raises(KbDataError, match="action 'check_link'"):
        parse_xids(text)
    ok = parse_xids(text.replace("[[xid]]\nxid = 13", '[[event]]\nkind = "ib_flap"'))
    assert ok.events["ib_flap"].action == "check_link"


def test_load_is_cached() -> None:
    assert load_xids() is load_xids()


def test_kb_package_exports_the_catalogue() -> None:
    from dolmen.kb import XidCatalogue as Exported
    from dolmen.kb import load_xids as exported

    assert Exported is XidCatalogue and exported is load_xids
