"""The stack's libraries: no dangling links; cuDNN, NCCL, TensorRT built for the installed CUDA
(the knowledge base's build table, kb/data/builds.toml) and their headers from the same release
as their libraries."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import Level, Outcome, check, failed, passed, skipped, unknown, warned
from dolmen.facts.reading import unrecorded
from dolmen.facts.stack import Component, StackFacts
from dolmen.kb import load_kb
from dolmen.kb.builds import Builds, parse_version
from dolmen.kb.cuda import parse_toolkit

# The check's source names the rows it judges by (built from kb/prebuilt.py: microseconds).
_SOURCES = "; ".join(lib.source for lib in load_kb().builds.libraries)


@check(
    "stack.libraries.broken_links",
    title="No NVIDIA or CUDA library link points to a missing file",
    level=Level.QUICK,
    needs=("stack",),
    remedy="Reinstall the package that owns the link (dpkg -S <path> or rpm -qf <path>, then "
    "sudo apt-get install --reinstall <package> or sudo dnf reinstall <package>), or remove "
    "the stale link; then sudo ldconfig.",
    source="a dangling libcuda/libnvidia-*/libcudnn*/libnccl* link makes dlopen fail at run "
    "time (typically left by a partial driver or cuDNN upgrade)",
)
def broken_links(ctx: Context) -> list[Outcome]:
    """Reads the links of libcuda, libnvidia-*, libcudnn*, libnccl*, libnvinfer*, libcublas*
    in the library folders (usr/lib/*-linux-gnu, usr/local/cuda*/lib64) and ldconfig -p."""
    s = ctx.stack
    if s.broken_links:
        return [
            failed(
                f"lib:/{b.path}",
                f"/{b.path} points to {b.target}, which does not exist",
                path=f"/{b.path}",
                target=b.target,
            )
            for b in s.broken_links
        ]
    if "broken_links" in s.unread:  # the linker cache alone cannot show a dangling link
        return [skipped("host", s.unread["broken_links"])]
    if s.libraries:
        return [
            passed(
                "host",
                f"no dangling link among the NVIDIA and CUDA libraries "
                f"({len(s.libraries)} in the linker cache)",
            )
        ]
    return [_no_libraries(s, "no NVIDIA or CUDA library in the linker cache: nothing to check")]


@check(
    "stack.libraries.consistent",
    title="The cuDNN, NCCL and TensorRT builds match the installed CUDA and their headers",
    level=Level.QUICK,
    needs=("stack",),
    remedy="Install the library's build for the toolkit's CUDA major (Ubuntu/Debian: "
    "libcudnn9-cuda-13, libnccl2=<version>+cuda13.0, libnvinfer10 from the CUDA repository; "
    "RHEL: libcudnn9-cuda-13, libnccl-<version>+cuda13.0), and remove headers left by another "
    "release (dpkg -S <header> or rpm -qf <header> names their package).",
    source=_SOURCES,
)
def consistent(ctx: Context) -> list[Outcome]:
    """Reads the cuDNN, NCCL and TensorRT versions (headers, else ldconfig -p), their library
    versions and the toolkits under usr/local/cuda*."""
    s = ctx.stack
    builds = ctx.kb.builds
    found = [
        (key, builds.get(key), stem, comp)
        for key, stem, comp in (
            ("cudnn", "libcudnn", s.cudnn),
            ("nccl", "libnccl", s.nccl),
            ("tensorrt", "libnvinfer", s.tensorrt),
        )
        if comp is not None
    ]
    if not found and unrecorded(why := s.unread.get("cudnn")):  # no headers, no linker cache
        return [skipped("host", f"cuDNN, NCCL and TensorRT: {why}", reason=why)]
    if not found:
        return [_no_libraries(s, "no cuDNN, NCCL or TensorRT installed (headers or linker cache)")]
    return [_one(s, f"lib:{key}", table, stem, comp) for key, table, stem, comp in found]


def _one(s: StackFacts, subject: str, table: Builds, stem: str, comp: Component) -> Outcome:
    version = parse_version(comp.version)
    ev: dict[str, Any] = {"version": comp.version, "source": f"/{comp.source}"}
    if version is None:
        return unknown(subject, f"{table.name} version {comp.version!r} is not a version", **ev)
    problems: list[str] = []
    undecided: list[str] = []
    majors = _cuda_majors(s, comp)
    ev["cuda_majors"] = sorted(majors)
    if majors:
        verdicts = {m: table.has_build(version, m) for m in majors}
        if any(verdicts.values()):
            pass
        elif all(v is False for v in verdicts.values()):
            wanted = ", ".join(f"CUDA {m}: {table.range_text(m)}" for m in sorted(majors))
            problems.append(
                f"{table.name} {comp.version} has no build for the installed CUDA ({wanted})"
            )
        else:
            undecided.append(
                f"whether {table.name} {comp.version} has a build for CUDA "
                f"{', '.join(str(m) for m in sorted(majors))} is not in dolmen's table"
            )
    if comp.source.endswith(".h"):
        for lib in s.libraries or ():
            if not lib.name.startswith(f"{stem}.so.") or not lib.version:
                continue
            lv = lib.version.split(".")
            if comp.version.split(".")[: len(lv)] != lv:
                problems.append(
                    f"/{comp.source} says {comp.version} but {lib.path} is {lib.version}"
                )
                ev.setdefault("libraries", {})[lib.path] = lib.version
    if problems:
        return warned(subject, "; ".join(problems), **ev)
    if undecided:
        return unknown(subject, "; ".join(undecided), **ev)
    paired = f", built for CUDA {'/'.join(str(m) for m in sorted(majors))}" if majors else ""
    alone = "" if majors else " (no CUDA toolkit installed to pair it with)"
    return passed(subject, f"{table.name} {comp.version}{paired}{alone}", **ev)


def _cuda_majors(s: StackFacts, comp: Component) -> set[int]:
    """The CUDA majors a library pairs with: its own toolkit when it lives inside one
    (tarball installs into usr/local/cuda-X.Y), else every installed toolkit."""
    owner = [t for t in s.toolkits if comp.source.startswith(f"{t.path}/")]
    majors = set()
    for t in owner or s.toolkits:
        parsed = None if t.version is None else parse_toolkit(t.version)
        if parsed is not None:
            majors.add(parsed[0])
    return majors


def _no_libraries(s: StackFacts, summary: str) -> Outcome:
    """skip when the linker cache was read (or there is none), unknown when it failed."""
    why = s.unread.get("libraries")
    if s.libraries is not None or why is None or why.startswith("missing") or unrecorded(why):
        return skipped("host", summary)
    return unknown("host", f"the linker cache could not be read: {why}", reason=why)
