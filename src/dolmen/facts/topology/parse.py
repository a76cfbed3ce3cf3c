"""The pure parser of ``nvidia-smi topo -m``: the matrix, the affinity columns, the NIC Legend.

The output, as drivers 450 to 610 print it (tabs between cells, the header underlined
with ANSI escapes on a terminal, and an empty cell before ``GPU NUMA ID``)::

    \\tGPU0\\tGPU1\\tNIC0\\tCPU Affinity\\tNUMA Affinity\\tGPU NUMA ID
    GPU0\\t X \\tNV18\\tPIX\\t0-79\\t0\\t\\tN/A
    ...
    Legend: ...
    NIC Legend:
      NIC0: mlx5_0

Older drivers name the NICs by their device (``mlx5_0``) in the header and print no NIC
Legend; older still have no ``GPU NUMA ID`` column. What people paste into tickets has
tabs turned into spaces, cells glued together (``NODENODE``) and the end cut off: cells
are read left to right and a row stops at the first cell that is not a path, so nothing
after a defect is guessed; a short row's last cell is dropped, as the paste may have cut
it mid-word (``NV18`` -> ``NV1``). Every defect is one line in ``problems``.
"""

from __future__ import annotations

from dolmen.facts.topology.model import GpuAffinity, Path, PathKind, TopoMatrix, is_gpu_label
from dolmen.frozen.regex import pattern
from dolmen.values.cpulist import CpuList, parse_cpulist

# Bounds against hostile input: the largest nodes print 8 GPUs and 18 NICs; a matrix of
# 512 devices is still under a megabyte of text.
MAX_TEXT = 1 << 20
MAX_DEVICES = 512
MAX_LINE = 1 << 16

AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_FIELDS = {"CPU Affinity": "cpus", "NUMA Affinity": "numa_node", "GPU NUMA ID": "gpu_numa_id"}

# Terminal escapes: CSI (the header's underline, colours) and OSC (a window title).
_ANSI = pattern(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]{0,256}(?:\x07|\x1b\\)")
_LABEL = pattern(r"[A-Za-z][A-Za-z0-9_.:-]{0,63}")
_CELL = pattern(r"X|NV([0-9]{1,3})|PIX|PXB|PHB|NODE|SYS|SOC")
_NIC_LEGEND = pattern(r"\s*(NIC[0-9]{1,4})\s*:\s*([A-Za-z0-9_.:-]{1,64})\s*")
_NUMBER = pattern(r"[0-9]{1,6}")
_AFFINITY = pattern(r"\bCPU Affinity\b")


def parse_path(cell: str) -> Path | None:
    """``NV18`` -> Path(NV, 18); ``PIX``, ``SYS``... (``SOC``: the old name of ``SYS``);
    None for anything else, ``NV0`` included."""
    m = _CELL.fullmatch(cell.strip())
    if m is None:
        return None
    if m.group(1) is not None:
        links = int(m.group(1))
        return Path(PathKind.NV, links) if links > 0 else None
    word = m.group(0)
    return Path(PathKind.SYS if word == "SOC" else PathKind(word))


def parse_topo(text: str) -> tuple[TopoMatrix | None, dict[str, str]]:
    """The matrix of an ``nvidia-smi topo -m`` output and the reasons for what is unread
    (``matrix`` when there is no matrix at all, ``GPU<n>.<field>`` per affinity cell).
    Never raises."""
    lines = _ANSI.sub("", text[:MAX_TEXT]).splitlines()
    start = next((i for i, line in enumerate(lines) if _is_header(line)), None)
    if start is None:
        return None, {"matrix": f"malformed: no matrix (no header naming GPU0): {_quote(text)}"}
    header = _header(lines[start])
    if isinstance(header, str):
        return None, {"matrix": header}
    devices, columns = header
    reasons: dict[str, str] = {}
    problems: list[str] = []
    if columns is None:
        problems.append("affinity columns not understood; they are not read")
    rows = _Rows(devices, columns, reasons, problems)
    # A text that stops without a newline may stop inside its last cell.
    cut_at = len(lines) - 1 if not text[:MAX_TEXT].endswith("\n") else -1
    end = start + 1
    while end < len(lines) and lines[end].strip() and not lines[end].lstrip().startswith("Legend"):
        if end - start > 2 * len(devices):
            problems.append("more rows than devices; the rest is not read")
            break
        rows.add(lines[end], cut=end == cut_at)
        end += 1
    rows.finish()
    return (
        TopoMatrix(
            devices=devices,
            paths=rows.paths,
            affinity=rows.affinity,
            nic_names=_nic_legend(lines[end:], devices),
            problems=tuple(problems),
        ),
        reasons,
    )


def _is_header(line: str) -> bool:
    words = line.split()
    return bool(words) and words[0] == "GPU0" and (len(words) == 1 or parse_path(words[1]) is None)


def _header(line: str) -> tuple[tuple[str, ...], tuple[str, ...] | None] | str:
    """Device labels and affinity column names (None: not understood), or the reason."""
    if len(line) > MAX_LINE:
        return f"malformed: a header line of {len(line)} characters"
    m = _AFFINITY.search(line)
    head, tail = (line[: m.start()], line[m.start() :]) if m else (line, "")
    devices = tuple(head.split())
    if len(devices) > MAX_DEVICES:
        return f"malformed: {len(devices)} device columns (at most {MAX_DEVICES} are read)"
    bad = next((d for d in devices if not _LABEL.fullmatch(d)), None)
    if bad is not None:
        return f"malformed: {bad[:40]!r} in the header is not a device name"
    if len(set(devices)) != len(devices):
        return "malformed: a device named twice in the header"
    found = sorted((tail.find(c), c) for c in AFFINITY_COLUMNS if c in tail)
    rest = tail
    for _, c in found:
        rest = rest.replace(c, "")
    columns = tuple(c for _, c in found) if not rest.strip() else None
    return devices, columns


class _Rows:
    """The rows read so far: paths, affinity, and what was wrong with each."""

    def __init__(
        self,
        devices: tuple[str, ...],
        columns: tuple[str, ...] | None,
        reasons: dict[str, str],
        problems: list[str],
    ) -> None:
        self.devices = devices
        self.columns = columns
        self.reasons = reasons
        self.problems = problems
        self.paths: dict[str, dict[str, Path]] = {}
        self.affinity: dict[str, GpuAffinity] = {}

    def add(self, line: str, *, cut: bool = False) -> None:
        """One row; ``cut``: the text ends inside it, so its last cell is not read."""
        if len(line) > MAX_LINE:
            self.problems.append(f"a row of {len(line)} characters, not read")
            return
        tabbed = "\t" in line
        cells = [c.strip() for c in line.split("\t")] if tabbed else line.split()
        label, rest = cells[0], cells[1:]
        if cut:
            rest = rest[:-1]
            self.problems.append(f"{label[:40]!r}: the output ends inside this row")
        if label not in self.devices:
            self.problems.append(f"a row {label[:40]!r} that is not a column (cut short?)")
            return
        if label in self.paths:
            self.problems.append(f"{label}: a second row, not read")
            return
        row = self.paths[label] = {}
        complete = self._cells(label, rest, row, cut=cut)
        if is_gpu_label(label):
            if complete and self.columns is not None:
                self._affinity(label, rest[len(self.devices) :], tabbed)
            else:
                self._unread(label, f"malformed: row {label} is not whole")

    def _cells(self, label: str, rest: list[str], row: dict[str, Path], *, cut: bool) -> bool:
        """Reads the row's cells left to right; whether all of them were read."""
        for i, column in enumerate(self.devices):
            if i >= len(rest):
                last = self.devices[i - 1] if i else label
                if not cut and last in row:
                    del row[last]  # a paste cut short may have cut its last cell mid-word
                why = f"{label}: {len(rest)} of {len(self.devices)} cells (cut short)"
                self.problems.append(f"{why}; the last one may be cut and is not read")
                return False
            path = parse_path(rest[i])
            if path is None or (path.kind is PathKind.X) != (column == label):
                self.problems.append(
                    f"{label}: {rest[i][:40]!r} under {column} is not its path; "
                    "the rest of the row is not read"
                )
                return False
            if column != label:
                row[column] = path
        return True

    def _affinity(self, label: str, cells: list[str], tabbed: bool) -> None:
        assert self.columns is not None
        n = len(self.columns)
        # nvidia-smi prints two tabs before "GPU NUMA ID" (an empty cell there).
        if (
            tabbed
            and n
            and len(cells) > n
            and self.columns[-1] == "GPU NUMA ID"
            and cells[-2] == ""
        ):
            del cells[-2]
        while len(cells) > n and cells[-1] == "":
            cells.pop()
        if len(cells) != n:
            self._unread(label, f"malformed: {len(cells)} affinity cells for {n} columns")
            return
        values = dict(zip(self.columns, cells, strict=True))
        self.affinity[label] = GpuAffinity(
            cpus=self._cpus(label, values.get("CPU Affinity")),
            numa_node=self._number(label, "numa_node", values.get("NUMA Affinity")),
            gpu_numa_id=self._number(label, "gpu_numa_id", values.get("GPU NUMA ID")),
        )

    def _cpus(self, label: str, cell: str | None) -> CpuList | None:
        if self._absent(label, "cpus", cell):
            return None
        assert cell is not None
        try:
            return parse_cpulist(cell)
        except ValueError:
            self.reasons[f"{label}.cpus"] = f"malformed: {cell[:40]!r}"
            return None

    def _number(self, label: str, name: str, cell: str | None) -> int | None:
        if self._absent(label, name, cell):
            return None
        assert cell is not None
        if _NUMBER.fullmatch(cell):
            return int(cell)
        self.reasons[f"{label}.{name}"] = f"malformed: {cell[:40]!r}"
        return None

    def _absent(self, label: str, name: str, cell: str | None) -> bool:
        key = f"{label}.{name}"
        if cell is None:
            self.reasons[key] = "not supported (no such column from this driver)"
        elif cell == "N/A":
            self.reasons[key] = "not supported (N/A)"
        elif cell == "":
            self.reasons[key] = "missing (an empty cell)"
        else:
            return False
        return True

    def _unread(self, label: str, why: str) -> None:
        for name in ("cpus", "numa_node", "gpu_numa_id"):
            self.reasons[f"{label}.{name}"] = why

    def finish(self) -> None:
        """Names the rows the output never printed (a paste cut short)."""
        absent = [d for d in self.devices if d not in self.paths]
        if absent:
            self.problems.append(f"no row for {', '.join(absent)} (the output ends early)")
        for label in absent:
            if is_gpu_label(label):
                self._unread(label, f"cut off (no {label} row: the output ends early)")


def _nic_legend(lines: list[str], devices: tuple[str, ...]) -> dict[str, str]:
    """``NIC0: mlx5_0`` lines after a ``NIC Legend:`` line, for NIC columns of the header."""
    names: dict[str, str] = {}
    inside = False
    for line in lines[: 4 * MAX_DEVICES]:
        if line.strip().startswith("NIC Legend"):
            inside = True
            continue
        m = _NIC_LEGEND.fullmatch(line) if inside else None
        if m and m.group(1) in devices:
            names[m.group(1)] = m.group(2)
    return names


def _quote(text: str, limit: int = 40) -> str:
    snippet = text.strip()[:limit]
    return repr(snippet + ("..." if len(text.strip()) > limit else ""))
