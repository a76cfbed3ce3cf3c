"""One builder per component kind: the version from the best source, the rest as where
it came from (``observe`` calls them in the lock's order)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dolmen.stack import sources as src
from dolmen.stack.model import Component, Package
from dolmen.stack.packages import upstream
from dolmen.stack.reading import Ctx, Unread, unknown


def kernel(c: Ctx) -> Component:
    release = c.fact("os", "kernel_release")
    if release is None:
        return unknown("kernel", "kernel", [c.unread("os", "kernel_release")])
    names = (f"linux-image-{release}", f"linux-image-unsigned-{release}")
    pkgs = [p for n, p in sorted(c.db.installed.items()) if n in names]
    if c.manager == "dnf":
        pkgs = [
            p
            for n, p in sorted(c.db.installed.items())
            if n in ("kernel", "kernel-core") and release.startswith(p.version.split(":")[-1])
        ]
    files = c.hashed(f"boot/vmlinuz-{release}")
    return Component(
        "kernel", "kernel", release, "proc/sys/kernel/osrelease", packages=tuple(pkgs), files=files
    )


def driver(c: Ctx) -> Component:
    pkgs = c.packages("driver")
    version, source = c.fact("stack", "driver_version"), "proc/driver/nvidia/version"
    if version is None and c.fact("gpu", "driver_version"):
        version, source = c.fact("gpu", "driver_version"), str(c.fact("gpu", "source"))
    primary = c.primary("driver")
    if version is None and primary is not None:
        version, source = upstream(primary.version), f"{c.db.source}: {primary.name}"
    if version is None:
        why = [c.unread("stack", "driver_version"), c.package_reason("driver")]
        return unknown("driver", "driver", why)
    details = {"branch": version.split(".")[0]}
    flavour = c.fact("stack", "driver_flavour")
    if flavour is None and primary is not None and "open" in primary.name:
        flavour = "open"
    if flavour:
        details["flavour"] = flavour
    libs = {lib.name: lib.path for lib in c.fact("stack", "libraries") or ()}
    return Component(
        "driver",
        "driver",
        version,
        source,
        details=details,
        packages=pkgs,
        files=c.hashed(libs.get("libcuda.so.1")),
    )


def module(c: Ctx) -> Component:
    info, why = c.run(["modinfo", "nvidia"], src.parse_modinfo)
    info = info or {}
    version = c.fact("stack", "module_version") or info.get("version")
    source = "sys/module/nvidia/version" if c.fact("stack", "module_version") else "modinfo nvidia"
    if version is None:
        return unknown("module", "module", [c.unread("stack", "module_version"), why])
    details: dict[str, str] = {}
    flavour = c.fact("stack", "driver_flavour") or src.module_flavour(info.get("license"))
    if flavour:
        details["flavour"] = flavour
    taints = (c.fact("stack", "module_taints") or {}).get("nvidia", "")
    if info.get("signer"):
        details["signer"] = info["signer"]
        details["sig_hashalgo"] = info.get("sig_hashalgo", "")
    elif info:
        details["signer"] = "unsigned"  # modinfo shows no signature
    elif "E" in taints:
        details["signer"] = "unsigned"  # taint E: an unsigned module was loaded
    else:
        details["signature"] = f"unknown: {why}"
    if taints:
        details["taints"] = taints
    filename = info.get("filename", "")
    files = c.hashed(filename) if filename.startswith("/") else ()
    return Component("module", "module", version, source, details=details, files=files)


def toolkits(c: Ctx) -> list[Component]:
    out: list[Component] = []
    default = c.fact("stack", "cuda_default")
    for tk in c.fact("stack", "toolkits") or ():
        cid = f"cuda:/{tk.path}"
        mm = re.match(r"(\d+)\.(\d+)", tk.version or tk.path.rsplit("-", 1)[-1])
        pkgs: tuple[Package, ...] = ()
        if mm:
            pat = re.compile(rf"cuda-(toolkit|cudart|nvcc)-{mm[1]}-{mm[2]}")
            pkgs = c.db.matching(pat)
        details = {"default": "yes"} if default == f"/{tk.path}" else {}
        if tk.version is None:
            why = f"malformed: no version in /{tk.path} (version.json, version.txt, include/cuda.h)"
            out.append(unknown(cid, "cuda", [why], packages=pkgs))
            continue
        files = c.hashed(tk.version_source)
        out.append(
            Component(cid, "cuda", tk.version, f"/{tk.version_source}", "", details, pkgs, files)
        )
    if not out:
        why = c.unread("stack", "toolkits")
        out.append(
            unknown(
                "cuda",
                "cuda",
                [why if "no toolkits" not in why else "missing: no usr/local/cuda* folder"],
            )
        )
    return out


def library(c: Ctx, kind: str) -> Component:
    comp = c.fact("stack", kind)
    pkgs = c.packages(kind)
    if comp is not None:
        source = "/" + comp.source.lstrip("/")
        return Component(
            kind, kind, comp.version, source, packages=pkgs, files=c.hashed(comp.source)
        )
    primary = c.primary(kind)
    if primary is not None:
        return Component(
            kind, kind, upstream(primary.version), f"{c.db.source}: {primary.name}", packages=pkgs
        )
    return unknown(kind, kind, [c.unread("stack", kind), c.package_reason(kind)])


_TOOLS: dict[str, tuple[list[str], Callable[[str], Any]]] = {
    "container-toolkit": (["nvidia-ctk", "--version"], src.parse_ctk_version),
    "fabric-manager": (["nv-fabricmanager", "--version"], src.parse_fm_version),
    "dcgm": (["dcgmi", "--version"], src.parse_dcgmi_version),
    "doca": (["ofed_info", "-s"], src.parse_ofed_info),
}


def tool(c: Ctx, kind: str) -> Component:
    pkgs = c.packages(kind)
    files = c.hashed(src.BINARIES.get(kind))
    primary = c.primary(kind)
    if primary is not None:
        version = upstream(primary.version)
        return Component(
            kind, kind, version, f"{c.db.source}: {primary.name}", packages=pkgs, files=files
        )
    argv, parse = _TOOLS[kind]
    value, why = c.run(argv, parse)
    reasons = [c.package_reason(kind), why]
    if value is None and kind == "fabric-manager":
        log = c.host.read_opt("var/log/fabricmanager.log")
        value = None if log is None else src.parse_fm_version(log)
        argv = ["var/log/fabricmanager.log"] if value else argv
    if value is None:
        return unknown(kind, kind, reasons, packages=pkgs)
    details: dict[str, str] = {}
    if isinstance(value, tuple):
        details["flavour"], value = value
    return Component(
        kind, kind, str(value), " ".join(argv), details=details, packages=pkgs, files=files
    )


def vbios(c: Ctx) -> list[Component]:
    out = []
    for g in c.fact("gpu", "gpus") or ():
        bus = g.pci_address or g.bus_id or str(g.position)
        details = {"model": g.name} if g.name else {}
        source = str(c.fact("gpu", "source"))
        if g.vbios:
            out.append(Component(f"vbios:{bus}", "vbios", g.vbios, source, details=details))
        else:
            why = g.unread.get("vbios") or f"not shown: {source} gives no VBIOS"
            out.append(unknown(f"vbios:{bus}", "vbios", [why], details=details))
    if not out:
        err = c.fact("gpu", "error") or (
            c.facts["gpu"].reason if isinstance(c.facts["gpu"], Unread) else ""
        )
        present = c.fact("gpu", "present")
        why = err or (
            "missing: no NVIDIA GPU on this host"
            if present is False
            else "unreadable: no GPU listed"
        )
        out.append(unknown("vbios", "vbios", [why]))
    return out


def nic_firmware(c: Ctx) -> list[Component]:
    seen: dict[str, Component] = {}
    for port in c.fact("infiniband", "ports") or ():
        if port.device in seen:
            continue
        details = {k: v for k, v in (("board_id", port.board_id), ("hca_type", port.hca_type)) if v}
        source = (
            f"sys/class/infiniband/{port.device}/fw_ver" if port.source == "sysfs" else port.source
        )
        cid = f"nic-firmware:{port.device}"
        if port.fw_version:
            seen[port.device] = Component(
                cid, "nic-firmware", port.fw_version, source, details=details
            )
        else:
            seen[port.device] = unknown(
                cid, "nic-firmware", [f"not shown: {port.source} gives no firmware"]
            )
    if not seen:
        return [unknown("nic-firmware", "nic-firmware", [c.unread("infiniband", "ports")])]
    return list(seen.values())
