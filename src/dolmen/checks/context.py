"""What a check body sees: typed facts (collected on first use), the KB, site limits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from dolmen.config import Config
from dolmen.facts import FactStore
from dolmen.host import Host

if TYPE_CHECKING:
    from dolmen.baseline import Baseline
    from dolmen.facts.containers import ContainerFacts
    from dolmen.facts.cpu import CpuFacts
    from dolmen.facts.gpu import GpuFacts
    from dolmen.facts.infiniband import InfinibandFacts
    from dolmen.facts.kernel_log import KernelLogFacts
    from dolmen.facts.memory import MemoryFacts
    from dolmen.facts.network import NetworkFacts
    from dolmen.facts.numa import NumaFacts
    from dolmen.facts.os import OsFacts
    from dolmen.facts.pci import PciFacts
    from dolmen.facts.security import SecurityFacts
    from dolmen.facts.stack import StackFacts
    from dolmen.facts.storage import StorageFacts
    from dolmen.facts.topology import TopologyFacts
    from dolmen.facts.tuning import TuningFacts
    from dolmen.kb import KnowledgeBase
    from dolmen.workloads.session import Workloads


class CheckView(Protocol):
    """What a context needs of the check it serves; ``model.CheckSpec`` is one.

    A protocol, so this module does not import ``model`` (which types check bodies
    with ``Context``): the two import one way only.
    """

    @property
    def id(self) -> str: ...

    @property
    def needs(self) -> tuple[str, ...]: ...

    @property
    def limits(self) -> Mapping[str, Any]: ...


class UndeclaredFact(Exception):
    """A check read a facts subsystem its metadata does not list in ``needs``."""


class Context:
    """Facts, KB and limits for one run; ``for_check`` narrows it to one check's view."""

    def __init__(
        self,
        host: Host,
        store: FactStore | None = None,
        config: Config | None = None,
        baseline: Baseline | None = None,
        spec: CheckView | None = None,
        workloads: Workloads | None = None,
    ) -> None:
        self.host = host
        self.store = store or FactStore(host)
        self.config = config or Config()
        self.baseline = baseline
        self.spec = spec
        # The active workloads (level full on the live host); None below level full and on
        # a tree or bundle, where the workload checks skip ("run on the live host only").
        self.workloads = workloads

    def for_check(self, spec: CheckView) -> Context:
        """The same run seen by one check: its needs enforced, its limits resolved."""
        ctx = Context(self.host, self.store, self.config, self.baseline, spec, self.workloads)
        ctx.__dict__["kb"] = self.kb  # share the loaded KB
        return ctx

    def facts(self, name: str) -> Any:
        """One subsystem's facts; raises FactError when they could not be collected."""
        if self.spec is not None and name not in self.spec.needs:
            raise UndeclaredFact(f"{self.spec.id} reads {name!r} facts but does not declare it")
        return self.store.get(name)

    def limit(self, name: str) -> Any:
        """A threshold of the current check: the site's value, else the check's default."""
        assert self.spec is not None, "limit() is for a check's own context"
        site = self.config.thresholds(self.spec.id)
        if name in site:
            return site[name]
        return self.spec.limits[name]

    @cached_property
    def kb(self) -> KnowledgeBase:
        """The knowledge base shipped with dolmen (loaded once per run)."""
        from dolmen.kb import load_kb

        return load_kb()

    # Typed accessors, one per facts subsystem (DESIGN.md "Facts").
    @property
    def os(self) -> OsFacts:
        return self.facts("os")  # type: ignore[no-any-return]

    @property
    def cpu(self) -> CpuFacts:
        return self.facts("cpu")  # type: ignore[no-any-return]

    @property
    def numa(self) -> NumaFacts:
        return self.facts("numa")  # type: ignore[no-any-return]

    @property
    def memory(self) -> MemoryFacts:
        return self.facts("memory")  # type: ignore[no-any-return]

    @property
    def pci(self) -> PciFacts:
        return self.facts("pci")  # type: ignore[no-any-return]

    @property
    def gpu(self) -> GpuFacts:
        return self.facts("gpu")  # type: ignore[no-any-return]

    @property
    def kernel_log(self) -> KernelLogFacts:
        return self.facts("kernel_log")  # type: ignore[no-any-return]

    @property
    def infiniband(self) -> InfinibandFacts:
        return self.facts("infiniband")  # type: ignore[no-any-return]

    @property
    def topology(self) -> TopologyFacts:
        return self.facts("topology")  # type: ignore[no-any-return]

    @property
    def network(self) -> NetworkFacts:
        return self.facts("network")  # type: ignore[no-any-return]

    @property
    def storage(self) -> StorageFacts:
        return self.facts("storage")  # type: ignore[no-any-return]

    @property
    def stack(self) -> StackFacts:
        return self.facts("stack")  # type: ignore[no-any-return]

    @property
    def containers(self) -> ContainerFacts:
        return self.facts("containers")  # type: ignore[no-any-return]

    @property
    def security(self) -> SecurityFacts:
        return self.facts("security")  # type: ignore[no-any-return]

    @property
    def tuning(self) -> TuningFacts:
        return self.facts("tuning")  # type: ignore[no-any-return]


# A predicate returns None when the check applies, else the reason it is skipped.
Predicate = Callable[[Context], str | None]


def _nvidia_gpu(ctx: Context) -> str | None:
    """None when any source shows a GPU (facts.gpu, then the kernel log's NVRM lines); else
    the sources that were read and those the bundle did not have."""
    from dolmen.facts.gpu import KERNEL_LOG, seen_with_log

    gpu = ctx.store.get("gpu")
    if gpu.present:
        return None
    try:
        log = ctx.store.get("kernel_log")
    except Exception:
        log = None
    seen, log_source = seen_with_log(gpu, log)
    if seen:
        return None
    sources = {**gpu.sources, KERNEL_LOG: log_source}
    return no_gpu_reason(sources)


def _nvidia_fabric(ctx: Context) -> str | None:
    """None when a GPU is seen (``_nvidia_gpu``) or the kernel log holds NVSwitch SXid or
    ``nvidia-nvswitchN: open`` lines: an NVSwitch's own lines are evidence of the NVLink
    fabric though no GPU is in the bundle (a pasted dmesg of an HGX board at driver load)."""
    reason = _nvidia_gpu(ctx)
    if reason is None:
        return None
    try:
        log = ctx.store.get("kernel_log")
    except Exception:
        return reason
    if any(ev.kind in ("sxid", "nvswitch") for ev in log.events or ()):
        return None
    return reason


def no_gpu_reason(sources: Mapping[str, str]) -> str:
    """ "no NVIDIA GPU seen: <sources read>; not in this bundle: <...>; unreadable: <...>"."""
    from dolmen.facts.reading import CUT_OFF, READ, UNREADABLE, source_state
    from dolmen.host import NOT_IN_BUNDLE

    by: dict[str, list[str]] = {READ: [], NOT_IN_BUNDLE: [], CUT_OFF: [], UNREADABLE: []}
    for name, why in sources.items():
        # a listing cut short was read in part: named as such, not as unreadable
        by[CUT_OFF if why.startswith(CUT_OFF) else source_state(why)].append(name)
    text = f"no NVIDIA GPU seen: {', '.join(by[READ]) or 'no GPU source'} read"
    for state in (NOT_IN_BUNDLE, CUT_OFF, UNREADABLE):
        if by[state]:
            text += f"; {state}: {', '.join(by[state])}"
    return text


def _infiniband(ctx: Context) -> str | None:
    from dolmen.facts.infiniband import why_no_ports  # "not in this bundle" vs "none here"

    return why_no_ports(ctx.store.get("infiniband"))


def _baseline(ctx: Context) -> str | None:
    return None if ctx.baseline is not None else "no baseline given (--baseline FILE)"


def _live(ctx: Context) -> str | None:
    return None if ctx.host.kind == "live" else "only meaningful on the live host"


PREDICATES: Mapping[str, tuple[Predicate, tuple[str, ...]]] = {
    # name: (function, facts it reads)
    "nvidia_gpu": (_nvidia_gpu, ("gpu", "kernel_log")),
    "nvidia_fabric": (_nvidia_fabric, ("gpu", "kernel_log")),
    "infiniband": (_infiniband, ("infiniband",)),
    "baseline": (_baseline, ()),
    "live": (_live, ()),
}
