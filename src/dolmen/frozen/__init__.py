"""``@frozen``: a frozen dataclass whose methods were compiled ahead of time.

``dataclasses.dataclass`` writes the source of ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` (and the four
order methods) for every class and compiles it with ``exec`` each time the
module is imported: about 0.6 ms a class, 49 ms for the 83 classes the quick
tier defined (issue 16), a quarter of a quick run. ``python -m dolmen.frozen`` captures
that source once (from the standard library itself, so it is the same code)
into ``frozen/compiled/<package>.py``, which Python compiles to bytecode like any module;
``@frozen`` then attaches those functions instead of compiling them again, and records the
fields itself (``_fields``): dataclasses' own pass over the fields tests every string
annotation with regular expressions, another 0.2 ms a class.

Typing does not change: ``frozen`` is a ``dataclass_transform``, so mypy sees a
frozen dataclass, and at run time the class is one (``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` work). A class whose definition no
longer matches what was captured (a field added, a default changed), or one the
capture does not cover (bases, its own ``__eq__``...), is made by
``dataclasses.dataclass(frozen=True)`` as before: a stale compiled file costs time,
never correctness, and a conformance test says when it is stale.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
import reprlib
import sys
from collections.abc import Callable
from types import FunctionType
from typing import Any, TypeVar, overload

from dolmen.compat import dataclass_transform

T = TypeVar("T")
Field = dataclasses.Field
MISSING: Any = dataclasses.MISSING
# dataclasses' own markers, read once: a Python whose dataclasses lacks one has no compiled
# methods either (compiled/ records the Python it was captured on).
_FIELD = getattr(dataclasses, "_FIELD", None)
_PARAMS: Any = getattr(dataclasses, "_DataclassParams", None)
_HAS_DEFAULT_FACTORY = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None)

# What dataclasses would add; a class defining one of them itself is left to dataclasses.
METHODS = (
    "__init__",
    "__repr__",
    "__eq__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__setattr__",
    "__delattr__",
    "__hash__",
)

_METHOD_SET = frozenset(METHODS)

# Every class @frozen made in this process: "module.qualname" -> (class, shape, order,
# whether compiled methods can stand in for dataclasses' on it).
REGISTRY: dict[str, tuple[type, str, bool, bool]] = {}


@overload
def frozen(cls: type[T], /) -> type[T]: ...


@overload
def frozen(*, order: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[T] | None = None, /, *, order: bool = False) -> Any:
    """``@frozen`` or ``@frozen(order=True)``: ``@dataclass(frozen=True[, order=True])``."""
    if cls is None:
        return lambda c: _make(c, order)
    return _make(cls, order)


def shape(cls: type, order: bool) -> str:
    """What the generated methods depend on, read from the class body before dataclasses
    processes it: fields, annotations, defaults and field() options, __post_init__, order."""
    body = cls.__dict__
    parts = [f"order={order}", f"post_init={hasattr(cls, '__post_init__')}"]
    for name, annotation in body.get("__annotations__", {}).items():
        value = body.get(name, dataclasses.MISSING)
        if isinstance(value, dataclasses.Field):
            options = (
                value.default is not dataclasses.MISSING,
                value.default_factory is not dataclasses.MISSING,
                value.init,
                value.repr,
                value.compare,
                value.hash,
                None if value.kw_only is dataclasses.MISSING else value.kw_only,
            )
            parts.append(f"{name}:{annotation}:field{options}")
        else:
            parts.append(f"{name}:{annotation}:{value is not dataclasses.MISSING}")
    return ";".join(parts)


def _make(cls: type[T], order: bool) -> type[T]:
    key = f"{cls.__module__}.{cls.__qualname__}"
    form = shape(cls, order)
    # Bases would bring fields; its own __eq__ and the like change what dataclasses adds; no
    # docstring makes dataclasses write one from __init__'s signature.
    covered = (
        cls.__bases__ == (object,) and bool(cls.__doc__) and _METHOD_SET.isdisjoint(cls.__dict__)
    )
    REGISTRY[key] = (cls, form, order, covered)
    entry = _compiled(key) if covered else None
    fields = _fields(cls) if entry is not None and entry[0] == form else None
    if entry is None or fields is None:
        return dataclasses.dataclass(frozen=True, order=order)(cls)
    _mark(cls, fields, order)
    module_globals = sys.modules[cls.__module__].__dict__
    _, factory, local_names, names = entry
    local = _locals(cls, fields)
    for name, fn in zip(names, factory(*[local[n] for n in local_names]), strict=True):
        if name == "__init__":
            # In the class's module, as dataclasses' exec puts it: the globals
            # typing.get_type_hints resolves the annotations of __init__ in.
            made = fn
            fn = FunctionType(
                made.__code__, module_globals, name, made.__defaults__, made.__closure__
            )
            fn.__annotations__ = made.__annotations__
        else:  # no annotations: only the module it names changes
            fn.__module__ = cls.__module__
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        # dataclasses wraps __repr__ so that a recursive repr prints "..."
        setattr(cls, name, reprlib.recursive_repr("...")(fn) if name == "__repr__" else fn)
    return cls


# An annotation naming one of these is not a plain field: dataclasses decides what it is.
def _pseudo(annotation: str) -> bool:
    return "ClassVar" in annotation or "InitVar" in annotation or "KW_ONLY" in annotation


def _fields(cls: type) -> dict[str, dataclasses.Field[Any]] | None:
    """The fields ``dataclasses.dataclass`` would find on a class with only plain fields
    (what the capture covers), or None to let dataclasses decide (and raise where it would).

    dataclasses tests each string annotation with three regular expressions (is it a
    ClassVar, an InitVar, KW_ONLY?): 0.2 ms a class, 18 ms of a quick run. Here the class
    body was already matched against what was captured (``shape``), so only the checks a
    changed default could still fail are made again."""
    body = cls.__dict__
    annotations = body.get("__annotations__", {})
    fields: dict[str, dataclasses.Field[Any]] = {}
    for name, annotation in annotations.items():
        if not isinstance(annotation, str) or _pseudo(annotation):
            return None
        default = getattr(cls, name, MISSING)
        if isinstance(default, Field):
            f = default
            if f.kw_only is MISSING:
                f.kw_only = False
        else:  # what dataclasses.field(default=default) makes, kw_only as dataclass's default
            f = Field(default, MISSING, True, True, None, True, None, False)  # type: ignore[arg-type]
        if f.default.__class__.__hash__ is None:  # a mutable default: dataclasses refuses it
            return None
        f.name = name
        f.type = annotation
        f._field_type = _FIELD  # type: ignore[attr-defined]
        fields[name] = f
    if any(isinstance(v, Field) and n not in annotations for n, v in body.items()):
        return None  # a field() without an annotation: dataclasses raises TypeError
    return fields


def _mark(cls: type, fields: dict[str, dataclasses.Field[Any]], order: bool) -> None:
    """What ``dataclass(frozen=True, order=...)`` records on a class besides its methods."""
    for f in fields.values():  # class attributes hold the defaults, not the Field objects
        if isinstance(cls.__dict__.get(f.name), Field):
            if f.default is MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    made: Any = cls  # the attributes dataclasses sets, which mypy does not know on a type
    made.__dataclass_params__ = _PARAMS(True, True, True, order, False, True)
    made.__dataclass_fields__ = fields
    if "__match_args__" not in cls.__dict__:
        names = tuple(f.name for f in fields.values() if f.init and not f.kw_only)
        type.__setattr__(cls, "__match_args__", names)
    abc.update_abstractmethods(cls)


def _compiled(key: str) -> Any:
    """The captured methods of a class (frozen/compiled/<package>.py), or None."""
    if not key.startswith("dolmen."):
        return None
    try:
        methods = importlib.import_module(f"dolmen.frozen.compiled.{key.split('.')[1]}")
    except ModuleNotFoundError:
        return None
    if sys.version_info[:2] != methods.PYTHON:
        return None
    record = methods.RECORDS.get(key)
    # (shape, factory, its parameters, the methods it returns); another layout is a file
    # written by an older generator: as stale as a changed class
    return record if isinstance(record, tuple) and len(record) == 4 else None


def _locals(cls: type, fields: dict[str, dataclasses.Field[Any]]) -> dict[str, Any]:
    """The values dataclasses binds to the names of the generated code, for this class."""
    local: dict[str, Any] = {
        "cls": cls,
        "MISSING": MISSING,
        "_HAS_DEFAULT_FACTORY": _HAS_DEFAULT_FACTORY,
        "__dataclass_builtins_object__": object,
        "_return_type": None,
        "FrozenInstanceError": dataclasses.FrozenInstanceError,
    }
    for name, f in fields.items():
        local[f"_type_{name}"] = f.type
        local[f"_dflt_{name}"] = f.default if f.default_factory is MISSING else f.default_factory
    return local
