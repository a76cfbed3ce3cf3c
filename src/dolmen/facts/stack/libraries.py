"""The user-space libraries of the stack: the linker cache, the links it names, the version
headers of cuDNN, NCCL and TensorRT, and dangling library links."""

from __future__ import annotations

from collections.abc import Mapping

from dolmen.facts.reading import absent, malformed, unrecorded
from dolmen.facts.stack.model import BrokenLink, CachedLibrary, Component, StackLibrary
from dolmen.facts.stack.versions import (
    parse_defines,
    parse_ldconfig,
    soname_version,
    version_from_defines,
)
from dolmen.frozen.regex import pattern
from dolmen.host import Host, RunStatus

# Library folders where a dangling link breaks CUDA applications.
LIBRARY_DIRS = (
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "usr/local/cuda*/lib64",
)
_STACK_LIB_RE = pattern(r"^lib(cuda|nvidia-|cudnn|nccl|nvinfer|cublas)")
_HEADER_DIRS = (
    "usr/include",
    "usr/include/x86_64-linux-gnu",
    "usr/include/aarch64-linux-gnu",
    "usr/local/cuda*/include",
    "usr/local/cuda*/targets/*/include",
)


LD_SO_CACHE = "etc/ld.so.cache"


def read_libraries(
    host: Host, unread: dict[str, str]
) -> tuple[tuple[StackLibrary, ...] | None, tuple[str, ...], str | None]:
    """The stack's libraries in the linker cache, the driver versions their sonames carry,
    and where the cache was read: ``ldconfig -p``, or etc/ld.so.cache itself where the
    command is not there (a bundle that copied the file, a root without ldconfig)."""
    res = host.run(["ldconfig", "-p"])
    if res.status is RunStatus.MISSING and host.exists("sbin/ldconfig"):
        res = host.run(["/sbin/ldconfig", "-p"])  # sbin is not on a user's PATH
    if res.ok:
        cached = parse_ldconfig(res.stdout)
        source = "ldconfig -p"
        if not cached:
            unread["libraries"] = malformed(res.stdout)
            return None, (), None
    elif res.status in (RunStatus.MISSING, RunStatus.UNRECORDED) and host.exists(LD_SO_CACHE):
        from dolmen.facts.stack.ldcache import parse_ld_so_cache  # bundles without ldconfig

        source = LD_SO_CACHE
        try:
            data = host.read_bytes(LD_SO_CACHE)
        except OSError as e:
            unread["libraries"] = f"unreadable: {LD_SO_CACHE} ({e.strerror or e})"
            return None, (), None
        if (found := parse_ld_so_cache(data)) is None:
            unread["libraries"] = f"malformed: {LD_SO_CACHE} is not a whole linker cache"
            return None, (), None
        cached = found
    else:
        unread["libraries"] = res.failure()
        return None, (), None
    stack = [c for c in cached if _STACK_LIB_RE.match(c.name)]
    libs = tuple(StackLibrary(c.name, c.path, _resolved_version(host, c)) for c in stack)
    # libnvidia-glcore.so.580.95.05 and friends carry the full driver version in their
    # soname: more than one version means a previous driver's libraries were left behind.
    full = (soname_version(c.name, c.name.split(".so.")[0]) for c in stack)
    userspace = sorted(
        {v for c, v in zip(stack, full) if v and "." in v and c.name.startswith("libnvidia-")},
        key=version_key,
    )
    return libs, tuple(userspace), source


def _resolved_version(host: Host, lib: CachedLibrary) -> str | None:
    """The version in the file name a library link finally points to (up to 8 links)."""
    stem = lib.name.split(".so")[0]
    rel = lib.path.lstrip("/")
    version = soname_version(rel.rsplit("/", 1)[-1], stem)
    for _ in range(8):
        target = host.readlink(rel)
        if target is None:
            break
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        rel = target.lstrip("/") if target.startswith("/") else f"{folder}/{target}"
        found = soname_version(rel.rsplit("/", 1)[-1], stem)
        if found is not None and (version is None or found.count(".") > version.count(".")):
            version = found
    return version


def lib_version(
    by_name: Mapping[str, StackLibrary], stem: str, unread: dict[str, str], listed: bool
) -> str | None:
    key = f"{stem.replace('-', '_')}_version"  # the field: libcuda_version...
    lib = by_name.get(f"{stem}.so.1")
    if lib is None:
        unread[key] = (
            f"missing: {stem}.so.1 is not in the linker cache"
            if listed
            else "unreadable: the linker cache could not be read"
        )
        return None
    if lib.version is None or lib.version == "1":
        unread[key] = f"unreadable: {lib.path} does not name its version"
        return None
    return lib.version


def read_component(
    host: Host,
    by_name: Mapping[str, StackLibrary],
    stem: str,
    headers: tuple[str, ...],
    names: tuple[str, str, str],
) -> Component | None:
    for folder in _HEADER_DIRS:
        for base in host.glob(folder):
            for header in headers:
                text = host.read_opt(f"{base}/{header}")
                if text is None:
                    continue
                version = version_from_defines(parse_defines(text), names)
                if version is not None:
                    return Component(version, f"{base}/{header}")
    libs = [lib for lib in by_name.values() if lib.name.startswith(f"{stem}.so.") and lib.version]
    if not libs:
        return None
    best = max(libs, key=lambda lib: version_key(lib.version or ""))
    return Component(best.version or "", best.path)


def broken_links(host: Host, unread: dict[str, str]) -> tuple[BrokenLink, ...]:
    """The dangling stack library links in LIBRARY_DIRS. A bundle without any of those
    folders (a linker cache alone) cannot show one: ``unread["broken_links"]`` says so."""
    out: list[BrokenLink] = []
    seen: set[str] = set()
    bases = [base for folder in LIBRARY_DIRS for base in host.glob(folder)]
    if not bases and unrecorded(host.absent(LIBRARY_DIRS[0])):
        unread["broken_links"] = absent(host, "usr/lib")
    for base in bases:
        if base.startswith("usr/local/cuda") and host.readlink(base.split("/lib")[0]):
            continue  # usr/local/cuda -> cuda-X.Y: the real folder is scanned itself
        for name in host.listdir(base):
            if not _STACK_LIB_RE.match(name):
                continue
            rel = f"{base}/{name}"
            target = host.readlink(rel)
            if target is not None and rel not in seen and not host.exists(rel):
                seen.add(rel)
                out.append(BrokenLink(rel, target))
    return tuple(out)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())
