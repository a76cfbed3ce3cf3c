"""The slurm.conf node line and the gres.conf of one node, from its facts (pure).

``slurmd -C`` prints a node line too, but only on the node itself, without GPUs, and
only once slurmd is installed; dolmen writes it from the same facts it validated, for
a live host or a host tree alike, with the GPUs and their CPU affinity:

    NodeName=node7 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063937 \
        Gres=gpu:h100:8   (one line)

``gres.conf`` is either ``AutoDetect=nvml`` (slurmd asks NVML for the devices and their
cores; Slurm must be built with NVML) or one explicit line per GPU:

    Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-55

``Cores=`` takes Slurm's *logical* core indices, not CPU numbers: "core 0 is the first
core on the first socket, core 1 the second core on the first socket" (gres.conf(5)).
A GPU's affinity is a CPU list (``0-55,112-167`` with SMT siblings); the CPU -> core map
comes from /proc/cpuinfo's ``physical id`` and ``core id`` (``parse_core_map``).

Nothing is guessed (DESIGN.md: absence is not evidence): a figure the facts do not hold
makes ``NodeShape.missing`` name it, and ``node_line`` refuses; a GPU whose affinity or
core map is unknown gets no ``Cores=`` (Slurm then lets any core use it) and a note says
why. RealMemory is MemTotal in MiB, what ``slurmd -C`` reports: a larger value marks the
node invalid, so a site wanting headroom lowers it (MemSpecLimit is the other way).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from dolmen.values.cpulist import format_cpulist

AUTODETECT = "nvml"
EXPLICIT = "explicit"
GRES_MODES = (EXPLICIT, AUTODETECT)
# The device node of GPU minor N on the node, as host paths are written (no leading
# slash); File= gets it absolute. --device names another (a container's or a lab's).
NVIDIA_DEVICE = "dev/nvidia{index}"
# Slurm node names: what a hostname may hold (hostname(7)), short form.
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
_VENDOR_WORDS = {"nvidia", "tesla", "geforce", "quadro"}


@dataclass(frozen=True)
class NodeGpu:
    """One GPU as gres.conf names it: its device minor (``/dev/nvidia<index>``), its type
    and the logical cores near it (None: unknown, the reason in ``NodeShape.notes``)."""

    index: int | None
    type: str
    bus: str | None = None
    cores: tuple[int, ...] | None = None
    cpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class NodeShape:
    """What a node line needs; ``missing`` names each figure the facts did not hold."""

    name: str
    cpus: int | None
    sockets: int | None
    cores_per_socket: int | None
    threads_per_core: int | None
    real_memory_mib: int | None
    gpus: tuple[NodeGpu, ...] = ()
    missing: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


class NotGenerated(ValueError):
    """A line cannot be written without guessing; the message names what is missing."""


def gres_type(product: str | None, kb_id: str | None = None) -> str:
    """Slurm's GPU type word: ``h100`` for "NVIDIA H100 80GB HBM3" (the knowledge base id's
    family, ``h100-sxm``), else the product name without vendor words (``rtx_3090``).

    Types are free text to Slurm but must match between slurm.conf and gres.conf and the
    users' ``--gres=gpu:h100:2``; lowercase letters, digits and ``_`` only."""
    if kb_id:
        head = kb_id.split("-")[0]
        word = kb_id if head == "rtx" else head
    else:
        parts = [p for p in (product or "").lower().split() if p not in _VENDOR_WORDS]
        word = "_".join(parts[:2]) if parts else "gpu"
    clean = re.sub(r"[^a-z0-9_]+", "_", word.lower()).strip("_")
    return clean or "gpu"


def parse_core_map(cpuinfo: str) -> dict[int, int]:
    """CPU number -> Slurm's logical core index, from /proc/cpuinfo.

    Each ``processor`` block's (``physical id``, ``core id``) names its core; the cores
    sorted by socket then core id are numbered 0, 1, ... (gres.conf(5)). Blocks without
    both ids (arm64 prints neither, a cut paste) are left out; so a CPU absent from the
    map is one whose core is unknown, never core 0."""
    pairs: dict[int, tuple[int, int]] = {}
    for block in re.split(r"\n\s*\n", cpuinfo):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        try:
            cpu = int(fields["processor"])
            pairs[cpu] = (int(fields["physical id"]), int(fields["core id"]))
        except (KeyError, ValueError):
            continue
    order = {core: i for i, core in enumerate(sorted(set(pairs.values())))}
    return {cpu: order[core] for cpu, core in pairs.items()}


def cores_of(cpus: Iterable[int], core_map: Mapping[int, int]) -> tuple[int, ...] | None:
    """The logical cores of a CPU list, None when any CPU's core is unknown."""
    found = set()
    for cpu in cpus:
        if cpu not in core_map:
            return None
        found.add(core_map[cpu])
    return tuple(sorted(found))


def node_name(name: str) -> str:
    """A Slurm NodeName: the short hostname (slurmd's default), checked; ValueError else."""
    short = name.split(".", maxsplit=1)[0]
    if not _NODE.fullmatch(short):
        raise ValueError(f"{name!r} is not a node name (letters, digits, '-' and '_')")
    return short


def shape(
    name: str,
    *,
    sockets: int | None,
    cores: int | None,
    threads: int | None,
    memory_bytes: int | None,
    gpus: Sequence[NodeGpu] = (),
    unread: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
    gpu_missing: Sequence[str] = (),
) -> NodeShape:
    """The node's shape from the CPU and memory facts: ``cores`` physical cores and
    ``threads`` logical CPUs over all ``sockets``; ``unread`` gives the facts' reasons;
    ``gpu_missing`` why the GPU count itself is not known (then no line at all: a line
    without them would tell Slurm the node has none)."""
    why = dict(unread or {})
    missing: list[str] = [f"Gres: {m}" for m in gpu_missing]
    for label, value, key in (("Sockets", sockets, "sockets"), ("cores", cores, "cores")):
        if not value:
            missing.append(f"{label}: {why.get(key, 'not read')}")
    if not threads:
        missing.append(f"CPUs: {why.get('threads', 'not read')}")
    if not memory_bytes:
        missing.append(f"RealMemory: {why.get('total_bytes', 'not read')}")
    per_socket = per_core = None
    if sockets and cores and threads:
        if cores % sockets or threads % cores:
            missing.append(
                f"CoresPerSocket/ThreadsPerCore: {cores} cores and {threads} CPUs "
                f"do not divide over {sockets} sockets"
            )
        else:
            per_socket, per_core = cores // sockets, threads // cores
    return NodeShape(
        name=name,
        cpus=threads,
        sockets=sockets,
        cores_per_socket=per_socket,
        threads_per_core=per_core,
        real_memory_mib=memory_bytes // (1 << 20) if memory_bytes else None,
        gpus=tuple(gpus),
        missing=tuple(missing),
        notes=tuple(notes),
    )


def gres_spec(gpus: Sequence[NodeGpu]) -> str:
    """``gpu:h100:8`` (``gpu:a:2,gpu:b:1`` on a node with two kinds), types in first-seen order."""
    counts: dict[str, int] = {}
    for g in gpus:
        counts[g.type] = counts.get(g.type, 0) + 1
    return ",".join(f"gpu:{t}:{n}" for t, n in counts.items())


def node_line(s: NodeShape, extra: Sequence[str] = ()) -> str:
    """The slurm.conf NodeName line; NotGenerated naming every missing figure."""
    if s.missing:
        raise NotGenerated("; ".join(s.missing))
    words = [
        f"NodeName={s.name}",
        f"CPUs={s.cpus}",
        f"Sockets={s.sockets}",
        f"CoresPerSocket={s.cores_per_socket}",
        f"ThreadsPerCore={s.threads_per_core}",
        f"RealMemory={s.real_memory_mib}",
    ]
    if s.gpus:
        words.append(f"Gres={gres_spec(s.gpus)}")
    return " ".join([*words, *extra])


def gres_conf(s: NodeShape, mode: str = EXPLICIT, device: str | None = None) -> str:
    """gres.conf for this node: ``AutoDetect=nvml``, or one ``Name=gpu`` line per GPU with
    ``File=`` (``device`` with ``{index}``: the device minor; default /dev/nvidia{index})
    and ``Cores=`` where known.

    Explicit lines carry ``NodeName=`` so one gres.conf can serve a whole cluster."""
    if mode not in GRES_MODES:
        raise ValueError(f"gres mode {mode!r}: choose {' or '.join(GRES_MODES)}")
    head = [f"# gres.conf for {s.name}, written by dolmen setup from its facts"]
    if not s.gpus:
        return "\n".join([*head, "# no NVIDIA GPU on this node: no GRES"]) + "\n"
    if mode == AUTODETECT:
        return "\n".join([*head, f"NodeName={s.name} AutoDetect=nvml Name=gpu"]) + "\n"
    unknown = [g for g in s.gpus if g.index is None]
    if unknown:
        buses = ", ".join(g.bus or "?" for g in unknown)
        raise NotGenerated(
            f"the device minor (/dev/nvidiaN) of GPU {buses} was not read: no File= line"
        )
    pattern = device or "/" + NVIDIA_DEVICE
    lines = [*head, "AutoDetect=off"]
    for g in s.gpus:
        where = f"# GPU {g.index}" + (f" at {g.bus}" if g.bus else "")
        if g.cpus is not None:
            where += f", CPUs {format_cpulist(g.cpus)}"
        lines.append(where)
        line = f"NodeName={s.name} Name=gpu Type={g.type} File={pattern.format(index=g.index)}"
        if g.cores is not None:
            line += f" Cores={format_cpulist(g.cores)}"
        lines.append(line)
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Rendered:
    """Both texts, or the reason each could not be written."""

    node_line: str | None
    gres: str | None
    problems: tuple[str, ...] = field(default_factory=tuple)


def render(
    s: NodeShape, mode: str = EXPLICIT, device: str | None = None, extra: Sequence[str] = ()
) -> Rendered:
    """``node_line`` and ``gres_conf`` together, each refusal kept as a problem line."""
    problems: list[str] = []
    line = gres = None
    try:
        line = node_line(s, extra)
    except NotGenerated as e:
        problems.append(f"slurm.conf node line: {e}")
    try:
        gres = gres_conf(s, mode, device)
    except NotGenerated as e:
        problems.append(f"gres.conf: {e}")
    return Rendered(line, gres, tuple(problems))
