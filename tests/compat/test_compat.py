"""dolmen.compat: the 3.11 names behave as 3.11's on every supported Python (CI runs this
file on 3.10 and on the newest), and no module reaches past it for a 3.11-only name."""

from __future__ import annotations

import ast
import enum
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from dolmen.compat import UTC, StrEnum, fromisoformat, tomllib

SRC = Path(__file__).resolve().parents[2] / "src" / "dolmen"
TESTS = SRC.parents[1] / "tests"

H1 = timezone(timedelta(hours=1))
M2 = timezone(timedelta(hours=-2, minutes=-30))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # what isoformat() writes: every Python reads it
        ("2026-03-01T12:00:00+00:00", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01T12:00:00.123456", datetime(2026, 3, 1, 12, 0, 0, 123456)),
        ("2026-03-01", datetime(2026, 3, 1)),
        # what 3.10 refuses and 3.11 reads: journald, dmesg, other tools' JSON
        ("2026-03-01T12:00:00Z", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01T12:00:00+0000", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01T12:00:00+01", datetime(2026, 3, 1, 12, tzinfo=H1)),
        ("2026-03-01T12:00:00-0230", datetime(2026, 3, 1, 12, tzinfo=M2)),
        ("2026-03-01T12:00:00,5+00:00", datetime(2026, 3, 1, 12, 0, 0, 500000, tzinfo=UTC)),
        ("2026-03-01T12:00:00.12Z", datetime(2026, 3, 1, 12, 0, 0, 120000, tzinfo=UTC)),
        ("2026-03-01 12:00:00.1234567", datetime(2026, 3, 1, 12, 0, 0, 123456)),
        ("20260301T120000", datetime(2026, 3, 1, 12)),
        ("2026-03-01T12", datetime(2026, 3, 1, 12)),
        ("2026-03-01T12:30", datetime(2026, 3, 1, 12, 30)),
    ],
)
def test_fromisoformat_reads_what_3_11_reads(text: str, expected: datetime) -> None:
    got = fromisoformat(text)
    assert got == expected and got.utcoffset() == expected.utcoffset()


@pytest.mark.parametrize(
    "text",
    [
        "",  # empty
        "yesterday",  # junk
        "2026-13-01T12:00:00Z",  # month 13
        "2026-03-01T25:00:00",  # hour 25
        "2026-03-01T12:00:00+2500",  # an offset past a day
        "2026-03",  # cut
        "2026-03-01T12:00:00Z\n; rm -rf /",  # hostile tail
        "١٢٣٤-03-01",  # non-ASCII digits
    ],
)
def test_fromisoformat_refuses_what_is_not_a_time(text: str) -> None:
    with pytest.raises(ValueError):
        fromisoformat(text)


class Colour(StrEnum):
    RED = "red"
    DARK_BLUE = enum.auto()


def test_strenum_prints_its_value_as_3_11_does() -> None:
    assert str(Colour.RED) == "red" and f"{Colour.RED}" == "red" and f"{Colour.RED:>5}" == "  red"
    assert Colour.RED == "red" and isinstance(Colour.RED, str)
    assert Colour("red") is Colour.RED and Colour.DARK_BLUE == "dark_blue"
    assert "-".join([Colour.RED, Colour.DARK_BLUE]) == "red-dark_blue"


def test_utc_is_the_standard_one() -> None:
    assert UTC is timezone.utc and datetime(2026, 1, 1, tzinfo=UTC).utcoffset() == timedelta(0)


def test_tomllib_reads_and_refuses_as_tomllib() -> None:
    assert tomllib.loads('a = 1\n[b]\nc = "x"\n') == {"a": 1, "b": {"c": "x"}}
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads("a = = 1")


# The 3.11+ standard-library names dolmen must take from dolmen.compat (or not use).
NEWER = {
    "tomllib": None,
    "enum": {"StrEnum", "ReprEnum", "verify", "member", "nonmember", "global_enum"},
    "datetime": {"UTC"},
    "typing": {
        "Self",
        "Unpack",
        "dataclass_transform",
        "Never",
        "LiteralString",
        "assert_never",
        "assert_type",
        "reveal_type",
        "TypeVarTuple",
        "Required",
        "NotRequired",
        "override",
        "TypeAliasType",
    },
    "asyncio": {"TaskGroup", "timeout", "Runner"},
    "hashlib": {"file_digest"},
    "contextlib": {"chdir"},
    "itertools": {"batched"},
}


TRY_STAR = getattr(ast, "TryStar", ())  # absent on 3.10, where except* does not parse


def _offences(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_text("utf-8"))
    except SyntaxError as e:  # 3.11+ syntax, on 3.10
        return [f"{path}:{e.lineno}: {e.msg}"]
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name in NEWER and NEWER[a.name] is None]
        elif isinstance(node, ast.ImportFrom) and node.module in NEWER:
            names = NEWER[node.module]
            bad += [f"{node.module}.{a.name}" for a in node.names if names and a.name in names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names = NEWER.get(node.value.id)
            if names and node.attr in names:
                bad.append(f"{node.value.id}.{node.attr}")
        elif isinstance(node, TRY_STAR):  # except* (3.11)
            bad.append("except*")
        elif isinstance(node, ast.Name) and node.id in ("ExceptionGroup", "BaseExceptionGroup"):
            bad.append(node.id)
    return [f"{path}:{b}" for b in bad]


def test_no_module_uses_a_3_11_name_past_compat() -> None:
    """mypy (python_version 3.10) catches most of these; this also covers the tests, which
    mypy does not check, and names mypy would accept through a typeshed stub."""
    files = [p for p in [*SRC.rglob("*.py"), *TESTS.rglob("*.py")] if "compat" not in p.parts]
    bad = [o for f in files for o in _offences(f)]
    assert not bad, "take these from dolmen.compat (3.10 lacks them): " + ", ".join(bad)


def test_this_interpreter_is_supported() -> None:
    assert sys.version_info >= (3, 10)
