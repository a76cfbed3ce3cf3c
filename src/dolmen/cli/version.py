"""``dolmen version``: dolmen, Python, the NVIDIA driver and NVML, for a bug report.

``dolmen --version`` prints dolmen's version alone (click's convention, for scripts);
this command adds what a report about a GPU host needs: the interpreter (3.10 on
Ubuntu 22.04 / DGX OS 6, newer elsewhere), the kernel module's version
(/proc/driver/nvidia/version) and the NVML library's (``nvmlSystemGetNVMLVersion``),
which differ after a driver upgrade without a reboot. What cannot be read is printed as
``unknown`` with the reason (no NVIDIA module loaded, libnvidia-ml not found), never
left out: a host without a driver is a finding, not a blank line.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable
from typing import Any

import click

from dolmen import __version__
from dolmen.host import Host

SCHEMA = "dolmen.version/1"
DRIVER_FILE = "proc/driver/nvidia/version"

NvmlReader = Callable[[], tuple[str | None, str | None]]


def collect(host: Host, nvml: NvmlReader | None = None) -> dict[str, Any]:
    """The ``dolmen.version/1`` document for ``host`` (``nvml``: the NVML reader; the
    host layer's own on a live host, ``not read`` on a host tree, whose NVML is not here)."""
    from dolmen.facts.reading import malformed, read_text
    from dolmen.facts.stack.versions import parse_nvrm_version

    driver: dict[str, Any] = {"version": None, "flavour": None, "source": DRIVER_FILE}
    r = read_text(host, DRIVER_FILE)
    if r.text is None:
        hint = " (no NVIDIA kernel module loaded)" if r.reason == "missing" else ""
        driver["reason"] = f"{r.reason}: {DRIVER_FILE}{hint}"
    elif (drv := parse_nvrm_version(r.text)) is None:
        driver["reason"] = malformed(r.text)
    else:
        driver.update(version=drv.version, flavour=drv.flavour)
    if nvml is None and host.kind == "live":
        from dolmen.host.gpu.versions import read_nvml_version

        nvml = read_nvml_version
    nvml_version: str | None = None
    why: str | None = f"not read: NVML is read on a live host only ({host.kind})"
    if nvml is not None:
        nvml_version, why = nvml()
    lib: dict[str, Any] = {"version": nvml_version}
    if nvml_version is None:
        lib["reason"] = why or "unreadable: NVML gave no version"
    return {
        "schema": SCHEMA,
        "dolmen": __version__,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "driver": driver,
        "nvml": lib,
        "nvidia_ml_py": _distribution("nvidia-ml-py"),
    }


def _distribution(name: str) -> dict[str, Any]:
    from importlib import metadata

    try:
        return {"version": metadata.version(name)}
    except metadata.PackageNotFoundError:
        return {"version": None, "reason": f"not installed: {name}"}


def render(doc: dict[str, Any]) -> str:
    """The terminal view: one ``name  value`` line each, ``unknown (reason)`` for a gap."""
    py = doc["python"]

    def part(d: dict[str, Any], extra: str = "") -> str:
        if d.get("version") is None:
            return f"unknown ({d.get('reason', 'not read')})"
        return f"{d['version']}{extra}"

    drv = doc["driver"]
    rows = [
        ("dolmen", doc["dolmen"]),
        ("python", f"{py['version']} ({py['implementation']}, {py['executable']})"),
        ("driver", part(drv, f" ({drv['flavour']} kernel module)" if drv.get("flavour") else "")),
        ("nvml", part(doc["nvml"])),
        ("nvidia-ml-py", part(doc["nvidia_ml_py"])),
    ]
    return "".join(f"{k:<13} {v}\n" for k, v in rows)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print dolmen.version/1 (JSON).")
def version(as_json: bool) -> None:
    """Print dolmen's, Python's, the NVIDIA driver's and NVML's versions.

    What cannot be read (no driver loaded, no libnvidia-ml) is printed as unknown with
    the reason. Exit code 0 whatever is missing: this describes, it does not judge.
    """
    from dolmen.host import open_host

    with open_host(None) as host:
        doc = collect(host)
    sys.stdout.write(json.dumps(doc, indent=2) + "\n" if as_json else render(doc))
