"""The start of a quick run, for the callers that start dolmen every few minutes on every
node (Slurm's HealthCheckProgram and prolog, node-problem-detector): dolmen's own modules
are found without probing (``find_own_modules``), standard modules imported but never
used are deferred, the cyclic garbage collector is off while the run lasts, and the
collection at exit is spared. ``cli/main.py``, ``cli/validate_run.py`` and
``slurm/hooks.py`` use it; bench/startup.py measures the whole start.
"""

from __future__ import annotations

import gc
import os
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec, SourceFileLoader
from typing import Any, ClassVar

# Standard modules that modules on the quick path import at their top but a quick run never
# uses: inspect (dataclasses, for the docstring of a class without one; with the ast, dis
# and tokenize it imports, 8 ms a start) and ipaddress (urllib.parse, for IPv6 URLs; 2 ms).
DEFERRED = ("inspect", "ipaddress")


class _OwnModules:
    """Finds dolmen's plain modules (``dolmen.x.y`` as ``.../dolmen/x/y.py``) from one
    listing of each package's folder.

    The standard path finder makes a spec in 0.4 million instructions a module (it probes
    each suffix a module may have, in Python); a quick run imports 150 of dolmen's, and
    this finder makes the same spec (same loader, file and cache) for 40% less. Anything
    else, a package, a name with a compiled extension or a folder beside it, a package
    spread over several folders, is left to the standard finders."""

    plain: ClassVar[dict[str, frozenset[str]]] = {}  # folder -> names of its plain modules

    @classmethod
    def find_spec(cls, name: str, path: Sequence[str] | None = None, target: Any = None) -> Any:
        if path is None or len(path) != 1 or not name.startswith("dolmen."):
            return None
        folder = path[0]
        plain = cls.plain.get(folder)
        if plain is None:
            plain = cls.plain[folder] = _plain_modules(folder)
        tail = name.rpartition(".")[2]
        if tail not in plain:
            return None
        origin = os.path.join(folder, tail + ".py")
        spec = ModuleSpec(name, SourceFileLoader(name, origin), origin=origin)
        spec.has_location = True  # what sets __file__ and __cached__, as the path finder does
        return spec


def _plain_modules(folder: str) -> frozenset[str]:
    """The names ``x`` of ``folder``'s ``x.py`` files that nothing else of that name
    (``x/``, ``x.so``...) could take precedence over."""
    try:
        entries = set(os.listdir(folder))
    except OSError:
        return frozenset()
    # str methods over the listing, no Python loop per suffix: this runs for every folder
    natives = {n.partition(".")[0] for n in entries if n.endswith(_NATIVE)}
    return frozenset({n[:-3] for n in entries if n.endswith(".py")} - entries - natives)


_NATIVE = tuple(EXTENSION_SUFFIXES)


def find_own_modules() -> None:
    """Put ``_OwnModules`` first in ``sys.meta_path`` (once)."""
    if _OwnModules not in sys.meta_path:
        sys.meta_path.insert(0, _OwnModules)


class _Deferred(types.ModuleType):
    """A module in ``sys.modules`` that runs its code on the first attribute read.

    ``import inspect`` binds this object without running inspect.py: the import statement
    reads only ``__spec__``, which is set (importlib.util.LazyLoader, by contrast, loads
    on that very read). Any other attribute runs the module in this same object, which
    from then on is a plain module, so ``inspect.signature`` works wherever it is asked.
    """

    def __getattr__(self, attr: str) -> Any:
        spec = self.__spec__
        assert spec is not None and spec.loader is not None
        # first: a circular import sees a plain module, and no read comes back here
        self.__class__ = types.ModuleType  # type: ignore[assignment]
        self.__file__ = spec.origin
        self.__cached__ = spec.cached
        try:
            spec.loader.exec_module(self)
        except BaseException:
            sys.modules.pop(self.__name__, None)  # as a failed import leaves it
            raise
        return getattr(self, attr)


def defer_imports(names: Sequence[str]) -> None:
    """Put each not yet imported plain module (a package is left alone) in sys.modules as
    a ``_Deferred`` one: imported for real when first used, never when unused."""
    for name in names:
        if name in sys.modules:
            continue
        spec = next((s for f in sys.meta_path if (s := f.find_spec(name, None)) is not None), None)
        if spec is None or spec.loader is None or spec.submodule_search_locations is not None:
            continue
        module = _Deferred(name)
        module.__spec__ = spec
        module.__loader__ = spec.loader
        module.__package__ = spec.parent
        sys.modules[name] = module


@contextmanager
def collector_off(off: bool) -> Iterator[None]:
    """The quick tier without the cyclic garbage collector.

    A quick run makes some 20,000 long-lived objects (modules, classes, functions, facts)
    and no garbage cycles worth a pass; with the default thresholds the collector ran 45
    times over them, 8% of the run. The setting is restored on the way out, so an
    in-process caller (tests, a service) keeps its own. Other levels run workloads for
    minutes: they keep the collector.
    """
    collecting = gc.isenabled()
    if off:
        gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def skip_final_collection() -> None:
    """Spare the interpreter's last garbage collection, at exit, after a quick run.

    At exit Python collects once more over every object still alive, the run's 15,000
    included, whether the collector is enabled or not: 12 ms, 9% of a quick run, to find
    next to nothing (the JSON encoder's closures, 33 objects). ``gc.freeze`` puts those
    objects out of its reach; what a run writes is closed or flushed before this. Only
    for a process whose command this was (``main()`` reading sys.argv): an in-process
    caller keeps collecting its own objects.
    """
    gc.freeze()
