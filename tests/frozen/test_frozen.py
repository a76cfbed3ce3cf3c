"""``@frozen`` classes behave exactly as ``dataclasses.dataclass(frozen=True)`` makes them
(signature, fields, repr, eq, hash, order, frozenness, on every row of the knowledge base),
use the compiled methods of frozen/compiled/, and those files are current."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from dolmen.frozen import METHODS, REGISTRY, frozen
from dolmen.frozen.generate import methods_sources, modules, package, twin_dataclass
from dolmen.kb import prebuilt

for _module in modules():
    importlib.import_module(_module)
COVERED = sorted(k for k, (_, _, _, covered) in REGISTRY.items() if covered)
COMPILED = Path(__file__).resolve().parents[2] / "src" / "dolmen" / "frozen" / "compiled"


def _methods(key: str) -> Any:
    return importlib.import_module(f"dolmen.frozen.compiled.{package(key)}")


def test_the_compiled_modules_are_current() -> None:
    wanted = methods_sources()
    python = {_methods(f"dolmen.{name.removesuffix('.py')}").PYTHON for name in wanted}
    if python != {sys.version_info[:2]}:
        pytest.skip(f"compiled/ was captured on Python {python}")
    current = {p.name: p.read_text() for p in COMPILED.glob("*.py") if p.name != "__init__.py"}
    assert current == wanted, "run: python -m dolmen.frozen"


@pytest.mark.parametrize("key", COVERED)
def test_each_class_uses_the_compiled_methods(key: str) -> None:
    cls, form, _, _ = REGISTRY[key]
    methods = _methods(key)
    entry = methods.RECORDS.get(key)
    assert entry is not None and entry[0] == form, "stale: run python -m dolmen.frozen"
    assert cls.__init__.__code__.co_filename == methods.__file__


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
    assert [
        (f.name, f.type, f.default, f.compare, f.hash, f.repr, f.init)
        for f in dataclasses.fields(cls)
    ] == [
        (f.name, f.type, f.default, f.compare, f.hash, f.repr, f.init)
        for f in dataclasses.fields(twin)
    ]
    assert _hints(cls.__init__) == _hints(twin.__init__)
    for name in METHODS:
        assert (name in cls.__dict__) == (name in twin.__dict__), name
        if name in cls.__dict__ and cls.__dict__[name] is not None:
            fn, other = cls.__dict__[name], twin.__dict__[name]
            assert fn.__qualname__ == other.__qualname__ == f"{cls.__qualname__}.{name}"
            assert fn.__module__ == other.__module__ == cls.__module__


def _rows(value: Any) -> list[Any]:
    """Every dataclass instance inside a prebuilt table."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            value,
            *(r for f in dataclasses.fields(value) for r in _rows(getattr(value, f.name))),
        ]
    if isinstance(value, tuple):
        return [r for v in value for r in _rows(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _rows(v)]
    return []


def _hash(value: object) -> int | str:
    try:
        return hash(value)
    except TypeError as e:  # a table holding a dict: unhashable either way
        return str(e)


def test_every_kb_row_behaves_as_its_dataclass_twin() -> None:
    twins: dict[type, Any] = {}
    rows = [
        r
        for name in ("cuda", "gpus", "ngc", "xids", "builds")
        for r in _rows(getattr(prebuilt, name)())
    ]
    assert len(rows) > 200
    for row in rows:
        cls = type(row)
        twin = twins.setdefault(
            cls, twin_dataclass(cls, REGISTRY[f"{cls.__module__}.{cls.__qualname__}"][2])
        )
        args = {f.name: getattr(row, f.name) for f in dataclasses.fields(row) if f.init}
        other = twin(**args)
        assert repr(row) == repr(other)
        assert _hash(row) == _hash(other)
        assert row == dataclasses.replace(row) and row != other  # another class: not equal
        assert dataclasses.asdict(row) == dataclasses.asdict(other)
        with pytest.raises(dataclasses.FrozenInstanceError):
            row.source = "x"  # type: ignore[misc]


def test_order_compares_like_the_dataclass() -> None:
    from dolmen.kb.cuda import DriverVersion

    a, b = DriverVersion((535, 54, 3), "535.54.03"), DriverVersion((535, 104, 5), "x")
    assert a < b and b > a and a <= a and b >= a and a == DriverVersion((535, 54, 3), "other")


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
