"""``@frozen`` classes behave exactly as ``dataclasses.dataclass(frozen=True)`` makes them
(signature, fields, repr, eq, hash, order, frozenness, on every row of the knowledge base
and every fact and verdict of the committed host trees),
use the compiled methods of frozen/compiled/, and those files are current."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from dolmen.checks.model import Level
from dolmen.checks.suite import validate
from dolmen.config import Config
from dolmen.facts import FactStore
from dolmen.frozen import METHODS, REGISTRY, frozen
from dolmen.frozen.generate import modules, package, sources, twin_dataclass
from dolmen.host import open_host
from dolmen.kb import prebuilt
from tests.hosts import scenarios

for _module in modules():
    importlib.import_module(_module)
COVERED = sorted(k for k, (_, _, _, covered) in REGISTRY.items() if covered)
COMPILED = Path(__file__).resolve().parents[2] / "src" / "dolmen" / "frozen" / "compiled"


def _methods(key: str) -> Any:
    return importlib.import_module(f"dolmen.frozen.compiled.{package(key)}")


def _needs_the_compiled_methods() -> None:
    """Skip where ``@frozen`` is dataclasses' own (another Python than compiled/'s): a
    class and its dataclass twin are then the same code, and the sweep compares nothing."""
    captured = _methods(COVERED[0]).PYTHON
    if sys.version_info[:2] != captured:
        pytest.skip(f"compiled/ was captured on Python {captured}: @frozen is dataclasses' here")


def test_the_compiled_modules_are_current() -> None:
    # asked before generating: the generator uses dataclasses' internals of that Python
    # (3.13 has no dataclasses._create_fn)
    names = [p.stem for p in COMPILED.glob("*.py") if p.name != "__init__.py"]
    python = {_methods(f"dolmen.{name}").PYTHON for name in names}
    if python != {sys.version_info[:2]}:
        pytest.skip(f"compiled/ was captured on Python {python}")
    wanted = sources()
    current = {p.name: p.read_text() for p in COMPILED.glob("*.py") if p.name != "__init__.py"}
    assert current == wanted, "run: python -m dolmen.frozen"


@pytest.mark.parametrize("key", COVERED)
def test_each_class_uses_the_compiled_methods(key: str) -> None:
    cls, form, _, _ = REGISTRY[key]
    methods = _methods(key)
    if sys.version_info[:2] != methods.PYTHON:  # frozen falls back to dataclasses' methods
        pytest.skip(f"compiled/ was captured on Python {methods.PYTHON}")
    entry = methods.RECORDS.get(key)
    assert entry is not None and entry[0] == form, "stale: run python -m dolmen.frozen"
    assert cls.__init__.__code__.co_filename == methods.__file__


def _field(f: dataclasses.Field[Any]) -> tuple[object, ...]:
    """All that dataclasses records of a field (``_field_type``: a field, not a ClassVar)."""
    return (
        f.name,
        f.type,
        f.default,
        f.default_factory,
        f.init,
        f.repr,
        f.hash,
        f.compare,
        dict(f.metadata),
        f.kw_only,
        f._field_type,  # type: ignore[attr-defined]
    )


def _hints(fn: object) -> object:
    try:
        return typing.get_type_hints(fn)
    except NameError as e:  # an annotation names a TYPE_CHECKING import: the same either way
        return str(e)


@pytest.mark.parametrize("key", COVERED)
def test_each_class_is_the_dataclass_it_replaces(key: str) -> None:
    cls, _, order, _ = REGISTRY[key]
    twin = twin_dataclass(cls, order)
    assert twin is not None
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    assert repr(cls.__dataclass_params__) == repr(twin.__dataclass_params__)  # type: ignore[attr-defined]
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    assert [_field(f) for f in cls.__dataclass_fields__.values()] == [  # type: ignore[attr-defined]
        _field(f)
        for f in twin.__dataclass_fields__.values()  # type: ignore[attr-defined]
    ]
    assert [(k, getattr(cls, k, None)) for k in cls.__dataclass_fields__] == [  # type: ignore[attr-defined]
        (k, getattr(twin, k, None))
        for k in twin.__dataclass_fields__  # type: ignore[attr-defined]
    ], "class attributes hold the defaults, as dataclasses leaves them"
    assert _hints(cls.__init__) == _hints(twin.__init__)
    for name in METHODS:
        assert (name in cls.__dict__) == (name in twin.__dict__), name
        if name in cls.__dict__ and cls.__dict__[name] is not None:
            fn, other = cls.__dict__[name], twin.__dict__[name]
            assert fn.__qualname__ == other.__qualname__ == f"{cls.__qualname__}.{name}"
            assert fn.__module__ == other.__module__ == cls.__module__


def _rows(value: Any) -> list[Any]:
    """Every dataclass instance inside a value (a prebuilt table, a host's facts, a verdict)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            value,
            *(r for f in dataclasses.fields(value) for r in _rows(getattr(value, f.name))),
        ]
    if isinstance(value, tuple | list | frozenset):
        return [r for v in value for r in _rows(v)]
    if isinstance(value, Mapping):
        return [r for v in value.values() for r in _rows(v)]
    return []


def _hash(value: object) -> int | str:
    try:
        return hash(value)
    except TypeError as e:  # a table holding a dict: unhashable either way
        return str(e)


def _behave_as_their_twins(rows: list[Any]) -> set[str]:
    """Each @frozen instance against the same values in its dataclass twin; the classes seen."""
    twins: dict[type, Any] = {}
    for row in rows:
        cls = type(row)
        key = f"{cls.__module__}.{cls.__qualname__}"
        if key not in COVERED:  # a slots=True or non-frozen dataclass: not @frozen's
            continue
        twin = twins.setdefault(cls, twin_dataclass(cls, REGISTRY[key][2]))
        args = {f.name: getattr(row, f.name) for f in dataclasses.fields(row) if f.init}
        other = twin(**args)
        assert repr(row) == repr(other)
        assert _hash(row) == _hash(other)
        assert row == dataclasses.replace(row) and row != other  # another class: not equal
        assert dataclasses.asdict(row) == dataclasses.asdict(other)
        with pytest.raises(dataclasses.FrozenInstanceError):
            row.source = "x"
    return {f"{c.__module__}.{c.__qualname__}" for c in twins}


@pytest.mark.parametrize("key", COVERED)
def test_each_class_behaves_as_its_twin_on_made_up_values(key: str) -> None:
    """Every class, also those no host tree makes: each field without a default gets a value
    of its own (an unhashable one too, so that __hash__ meets a TypeError both ways)."""
    cls, _, order, _ = REGISTRY[key]
    twin = twin_dataclass(cls, order)
    assert twin is not None
    for made_up in (lambda n: (n, f"v{n}"), lambda n: [n]):
        args = {
            f.name: made_up(n)
            for n, f in enumerate(dataclasses.fields(cls))
            if f.init and f.default is f.default_factory is dataclasses.MISSING
        }
        try:
            other = twin(**args)
        except Exception as e:  # a __post_init__ refusing the values: the same both ways
            with pytest.raises(type(e)):
                cls(**args)
            continue
        assert _behave_as_their_twins([cls(**args)]) == {key}
        if order:
            lower = twin(**{k: made_up(-1) for k in args})
            assert (cls(**{k: made_up(-1) for k in args}) < cls(**args)) == (lower < other)


def test_every_kb_row_behaves_as_its_dataclass_twin() -> None:
    _needs_the_compiled_methods()
    rows = [
        r
        for name in ("cuda", "gpus", "ngc", "xids", "builds")
        for r in _rows(getattr(prebuilt, name)())
    ]
    assert len(rows) > 200
    _behave_as_their_twins(rows)


def test_every_scenarios_facts_and_verdict_behave_as_their_dataclass_twins(
    tmp_path: Path,
) -> None:
    """Each committed host tree's facts (every subsystem) and standard verdict: the classes
    of host/, facts/, checks/, values/ and config with the values a real run gives them."""
    _needs_the_compiled_methods()
    seen: set[str] = set()
    for name in scenarios.names():
        try:
            root = scenarios.build(name, tmp_path / name)
        except scenarios.MissingRecording:
            continue
        with open_host(root) as host:
            facts = FactStore(host).collect()
            verdict = validate(host, level=Level.STANDARD, config=Config())
        seen |= _behave_as_their_twins(_rows([*facts.values(), verdict, Config()]))
    packages = {package(key) for key in seen}
    assert {"host", "facts", "checks", "config"} <= packages, packages
    assert len(seen) > 50, sorted(set(COVERED) - seen)


def test_order_compares_like_the_dataclass() -> None:
    from dolmen.kb.cuda import DriverVersion

    a, b = DriverVersion((535, 54, 3), "535.54.03"), DriverVersion((535, 104, 5), "x")
    assert a < b and b > a and a <= a and b >= a and a == DriverVersion((535, 54, 3), "other")


def test_values_behave_and_order_as_their_dataclass_twins() -> None:
    from dolmen.values.busid import BusId
    from dolmen.values.cpulist import parse_cpulist

    ids = [BusId.parse(t) for t in ("0000:17:00.0", "0000:03:00.1", "10000:01:00.0", "00:1f.7")]
    assert None not in ids
    seen = _behave_as_their_twins([*ids, parse_cpulist("0-3,8"), parse_cpulist("")])
    assert seen == {"dolmen.values.busid.BusId", "dolmen.values.cpulist.CpuList"}
    twin = twin_dataclass(BusId, True)
    assert twin is not None
    twins = [twin(**dataclasses.asdict(i)) for i in ids]
    assert sorted(range(4), key=lambda n: ids[n]) == sorted(range(4), key=lambda n: twins[n])
    assert [a < b for a in ids for b in ids] == [a < b for a in twins for b in twins]


def test_a_class_not_captured_is_a_plain_dataclass() -> None:
    @frozen
    class Point:
        """Not in compiled/: made by dataclasses."""

        x: int
        y: int = 0

    p = Point(1)
    assert p == Point(1, 0) and hash(p) == hash(Point(1)) and repr(p).endswith("Point(x=1, y=0)")
    assert "compiled" not in Point.__init__.__code__.co_filename
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
