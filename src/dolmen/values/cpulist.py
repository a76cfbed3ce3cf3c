"""CPU lists as the kernel writes them (``0-3,8,10-11``): one parser, one printed form.

The syntax is the kernel's ``bitmap_parselist`` (Documentation/admin-guide/
kernel-parameters.rst, "cpu lists"): comma-separated CPU numbers and ascending
ranges ``a-b``, and the group form ``a-b:used/group`` (``100-2000:2/25`` is
CPUs 100, 101, 125, 126, ...). The kernel prints only numbers and ranges
(``%*pbl``: ``/sys/devices/system/cpu/online``, ``node<N>/cpulist``,
``smp_affinity_list``), which is what ``format_cpulist`` writes.

Stricter than the kernel, on purpose:

- ``N`` and ``all`` (the host's last CPU, every CPU) are refused: they mean
  something only against a CPU count this pure parser does not have.
- Empty items (``1,,2``, ``0-3,``) are refused: the kernel skips them on
  write, but never prints them, so in a file or a profile they are a typo.
- Numbers are ASCII decimal digits only (Python's ``int`` would take ``1_000``
  and other scripts' digits).

An empty text is the empty list: a memory-only NUMA node (a Grace Hopper GPU's
memory, a CXL expander) has no CPUs, and that is a fact, not an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from dolmen.frozen import frozen
from dolmen.frozen.regex import pattern

# The highest CPU number accepted. The kernel's own bound is NR_CPUS, at most 8192
# (x86_64 and arm64 NR_CPUS_RANGE_END with MAXSMP / CPUMASK_OFFSTACK); 65535 leaves eight
# times that for a future kernel while keeping the largest list at 65,536 numbers, so a
# hostile or mistyped "0-9999999" is refused instead of building ten million of them.
MAX_CPU = 65535

_ITEM = pattern(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+)/([0-9]+))?)?")
_FORMS = "write it like 0-3,8,10-11 (or a-b:used/group, as the kernel takes)"


@frozen
class CpuList:
    """A set of CPU numbers, sorted and without repeats; ``str()`` is the kernel's form."""

    cpus: tuple[int, ...] = ()

    def __str__(self) -> str:
        return format_cpulist(self.cpus)

    def __iter__(self) -> Iterator[int]:
        return iter(self.cpus)

    def __len__(self) -> int:
        return len(self.cpus)

    def __contains__(self, cpu: object) -> bool:
        return cpu in self.cpus


def parse_cpulist(text: str) -> CpuList:
    """``0-3,8,10-11`` -> CPUs 0, 1, 2, 3, 8, 10, 11. Surrounding whitespace (a file's
    newline) and spaces around items are ignored; ValueError says what is wrong."""
    body = text.strip()
    if not body:
        return CpuList()
    cpus: set[int] = set()
    for raw in body.split(","):
        item = raw.strip()
        cpus.update(_item(text, item))
    return CpuList(tuple(sorted(cpus)))


def format_cpulist(cpus: Iterable[int]) -> str:
    """CPU numbers as the kernel prints them: ascending, runs of two or more as ``a-b``."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(set(cpus)):
        if run and cpu == run[-1] + 1:
            run[-1] = cpu
            continue
        if run:
            out.append(_run(run))
        run = [cpu, cpu]
    if run:
        out.append(_run(run))
    return ",".join(out)


def _run(run: list[int]) -> str:
    lo, hi = run
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _item(text: str, item: str) -> range | Iterator[int]:
    """The CPUs of one item; ValueError naming the item and why."""
    if not item:
        raise _error(text, "an empty item between commas")
    if item.lower() == "all" or "N" in item:
        raise _error(text, f"{item!r} depends on the host's CPU count; give the numbers")
    m = _ITEM.fullmatch(item)
    if m is None:
        raise _error(text, f"{item!r} is not a CPU number or a range a-b")
    lo = _number(text, m.group(1))
    hi = _number(text, m.group(2)) if m.group(2) is not None else lo
    if hi < lo:
        raise _error(text, f"range {item!r} runs backwards")
    if m.group(3) is None:
        return range(lo, hi + 1)
    used, group = int(m.group(3)), int(m.group(4))
    if group == 0 or used > group:
        raise _error(text, f"group {item!r} needs 0 < group size and used <= group size")
    return (cpu for cpu in range(lo, hi + 1) if (cpu - lo) % group < used)


def _number(text: str, digits: str) -> int:
    # Long digit strings are refused before int() converts them (Python refuses past
    # 4,300 digits with a message about its own limit, not about CPUs).
    if len(digits.lstrip("0")) > len(str(MAX_CPU)) or int(digits) > MAX_CPU:
        raise _error(text, f"CPU {digits} is above {MAX_CPU}, more than any kernel supports")
    return int(digits)


def _error(text: str, why: str) -> ValueError:
    return ValueError(f"{text.strip()!r} is not a CPU list: {why}; {_FORMS}")
