"""The start of a quick run, for the callers that start dolmen every few minutes on every
node (Slurm's HealthCheckProgram and prolog, node-problem-detector): standard modules
imported but never used are deferred, the cyclic garbage collector is off while the run
lasts, and the collection at exit is spared. ``cli/validate_run.py`` and
``slurm/hooks.py`` both use it; bench/startup.py measures the whole start.
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

# Standard modules that modules on the quick path import at their top but a quick run never
# uses: inspect (dataclasses, for the docstring of a class without one; with the ast, dis
# and tokenize it imports, 8 ms a start) and ipaddress (urllib.parse, for IPv6 URLs; 2 ms).
DEFERRED = ("inspect", "ipaddress")


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
