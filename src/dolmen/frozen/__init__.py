"""``@frozen``: a frozen dataclass whose methods were compiled ahead of time.

``dataclasses.dataclass`` writes the source of ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` (and the four
order methods) for every class and compiles it with ``exec`` each time the
module is imported: about 0.6 ms a class, 49 ms for the 83 classes the quick
tier defined (issue 16), a quarter of a quick run. ``python -m dolmen.frozen`` captures
that source once (from the standard library itself, so it is the same code)
into ``frozen/compiled/<package>.py``, which Python compiles to bytecode like any module;
``@frozen`` then attaches those functions instead of compiling them again.

Typing does not change: ``frozen`` is a ``dataclass_transform``, so mypy sees a
frozen dataclass, and at run time the class is one (``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` work). A class whose definition no
longer matches what was captured (a field added, a default changed), or one the
capture does not cover (bases, its own ``__eq__``...), is made by
``dataclasses.dataclass(frozen=True)`` as before: a stale compiled file costs time,
never correctness, and a conformance test says when it is stale.
"""

from __future__ import annotations

import dataclasses
import importlib
import reprlib
import sys
from collections.abc import Callable
from types import FunctionType
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

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
        cls.__bases__ == (object,)
        and bool(cls.__doc__)
        and not any(m in cls.__dict__ for m in METHODS)
    )
    REGISTRY[key] = (cls, form, order, covered)
    entry = _compiled(key) if covered else None
    if entry is None or entry[0] != form:
        return dataclasses.dataclass(frozen=True, order=order)(cls)
    # Fields, __dataclass_fields__, __match_args__ without generating a line of code...
    made = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = made.__dataclass_fields__  # type: ignore[attr-defined]
    module_globals = sys.modules[cls.__module__].__dict__
    for name, factory, local_names in entry[1]:
        made_fn = factory(*(_local(n, cls, fields) for n in local_names))
        # In the class's module, as dataclasses' exec puts it: __module__, and the globals
        # typing.get_type_hints resolves the annotations in.
        fn = FunctionType(
            made_fn.__code__, module_globals, name, made_fn.__defaults__, made_fn.__closure__
        )
        fn.__annotations__ = made_fn.__annotations__
        fn.__qualname__ = f"{cls.__qualname__}.{name}"
        # dataclasses wraps __repr__ so that a recursive repr prints "..."
        setattr(made, name, reprlib.recursive_repr("...")(fn) if name == "__repr__" else fn)
    # ... then the parameters dataclass(frozen=True, order=...) would have recorded.
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.init = params.repr = params.eq = params.frozen = True
    params.order = order
    return made


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
    return methods.RECORDS.get(key)


def _local(name: str, cls: type, fields: dict[str, dataclasses.Field[Any]]) -> Any:
    """The value dataclasses binds to a name of the generated code, for this class."""
    if name.startswith("_type_"):
        return fields[name.removeprefix("_type_")].type
    if name.startswith("_dflt_"):
        f = fields[name.removeprefix("_dflt_")]
        return f.default if f.default_factory is dataclasses.MISSING else f.default_factory
    return {
        "cls": cls,
        "MISSING": dataclasses.MISSING,
        "_HAS_DEFAULT_FACTORY": getattr(dataclasses, "_HAS_DEFAULT_FACTORY"),  # noqa: B009
        "__dataclass_builtins_object__": object,
        "_return_type": None,
        "FrozenInstanceError": dataclasses.FrozenInstanceError,
    }[name]
