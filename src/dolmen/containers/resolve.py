"""Which NGC release of a framework this host's driver runs: pure, from the knowledge base.

A release runs *natively* when the driver meets the minimum of the CUDA toolkit it is
built on (cuda.toml: the CUDA release notes' table, not the release notes' rounder
"driver release 545 or later"). On a data-center GPU it may also run by *forward
compatibility*: the images carry the cuda-compat libraries and load them at start when
the host driver is older, but only on the driver branches each release's notes list
("470.57 (or later R470), 525.85 (or later R525)..."). The driver must be in one of
those branches and at least that release of it; any other branch must be upgraded. A
branch list the knowledge base marks unverified is not applied.
GeForce and workstation boards are not covered (the CUDA compatibility guide: data-center
GPUs and select NGC Server Ready RTX SKUs only; error 804 otherwise), and a GPU dolmen
cannot name is not assumed to be a data-center one.

An unknown driver is refused, never guessed: the answer would pull an image that does
not start, or hold a node on an old one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dolmen.errors import UsageError
from dolmen.kb.cuda import CudaTable, DriverVersion
from dolmen.kb.ngc import FRAMEWORKS, NgcRelease, NgcTable

NATIVE = "native"
FORWARD = "forward-compat"

_CUDA_RE = re.compile(r"\d{1,2}(?:\.\d{1,3}){0,2}")

# Product names of boards outside forward compatibility (GeForce, TITAN, Quadro, the
# workstation "NVIDIA RTX" line) and of data-center boards (Tesla and the letter-number
# families: A100, H100, H200, B200, GB200, GH200, L40S, L4, T4, V100, A10, A30...).
_CONSUMER_RE = re.compile(r"geforce|titan|quadro|\brtx\b", re.I)
_DATACENTER_RE = re.compile(
    r"tesla|\b(?:g?[abhl]\d{1,3}[a-z]?|gb\d{3}|gh\d{3}|[tvp]\d{1,3}|h800|h20|a800)\b", re.I
)


def gpu_class(name: str) -> str | None:
    """ "datacenter", "consumer" (GeForce, TITAN, Quadro, RTX workstation) or None (unknown)."""
    if _CONSUMER_RE.search(name):
        return "consumer"
    if _DATACENTER_RE.search(name):
        return "datacenter"
    return None


@dataclass(frozen=True)
class Choice:
    """One release the driver runs, and how."""

    release: NgcRelease
    mode: str  # NATIVE | FORWARD
    min_driver: str  # the CUDA toolkit's own minimum
    why: str
    compat_branch: str | None = None  # the notes' branch entry that admits it (FORWARD)


@dataclass(frozen=True)
class Resolution:
    """The newest release of ``framework`` this driver runs, or why none is named."""

    framework: str
    driver: str | None
    datacenter: bool | None  # None: the GPU model is unknown (forward compat not applied)
    cuda: str | None  # the --cuda filter
    choice: Choice | None
    native: Choice | None  # the newest native release, when ``choice`` needs forward compat
    refused: str | None = None  # why no release is named
    notes: tuple[str, ...] = field(default_factory=tuple)
    too_old: bool = False  # refused because the driver is older than every release


def check_framework(framework: str) -> str:
    """The framework name, or UsageError naming the valid ones."""
    if framework not in FRAMEWORKS:
        raise UsageError(
            f"unknown framework {framework!r}", hint=f"valid frameworks: {', '.join(FRAMEWORKS)}"
        )
    return framework


def _cuda_matches(release: NgcRelease, cuda: str) -> bool:
    if release.cuda is None:
        return False
    want, have = cuda.split("."), release.cuda.split(".")
    return have[: len(want)] == want


def _forward(release: NgcRelease, drv: DriverVersion) -> str | None:
    """The compat entry of ``release`` the driver falls under ("535.86"), else None."""
    for entry in release.datacenter_compat_drivers:
        base = DriverVersion.parse(entry)
        if base is not None and base.branch == drv.branch and drv >= base:
            return entry
    return None


def resolve(
    ngc: NgcTable,
    cuda_table: CudaTable,
    framework: str,
    driver: str | None,
    *,
    datacenter: bool | None,
    cuda: str | None = None,
    driver_unknown: str = "the driver version could not be read",
) -> Resolution:
    """The newest release of ``framework`` (newest CUDA, filtered by ``cuda``) ``driver``
    runs natively, or by forward compatibility on a data-center GPU."""
    check_framework(framework)
    releases = list(reversed(ngc.of(framework)))
    notes: list[str] = []

    def refuse(why: str) -> Resolution:
        return Resolution(framework, driver, datacenter, cuda, None, None, why, tuple(notes))

    if cuda is not None:
        if not _CUDA_RE.fullmatch(cuda):
            raise UsageError(f"--cuda {cuda!r} is not a CUDA version", hint="e.g. --cuda 12.4")
        known = sorted({r.cuda for r in releases if r.cuda}, reverse=True)
        releases = [r for r in releases if _cuda_matches(r, cuda)]
        if not releases:
            return refuse(
                f"no {framework} release in the knowledge base ships CUDA {cuda} "
                f"(it knows {', '.join(known)})"
            )
    if driver is None:
        return refuse(f"{driver_unknown}: dolmen does not guess (pass --driver VERSION)")
    drv = DriverVersion.parse(driver)
    if drv is None:
        return refuse(f"{driver!r} is not a driver version: dolmen does not guess")
    if datacenter is None:
        notes.append("forward compatibility not considered: the GPU model is unknown")
    elif not datacenter:
        notes.append("forward compatibility does not apply: not a data-center GPU")
    native = forward = None
    for r in releases:
        need = ngc.min_driver(r, cuda_table)
        if need is None and r.driver_branch:
            need = DriverVersion.parse(r.driver_branch)  # a toolkit cuda.toml lacks
        if need is None:
            notes.append(f"{r.release}: no minimum driver known (CUDA {r.cuda}); skipped")
            continue
        if drv >= need and native is None:
            native = Choice(
                r, NATIVE, str(need), f"driver {drv} >= {need}, CUDA {r.cuda}'s minimum"
            )
        entry = _forward(r, drv) if datacenter else None
        if entry is not None and "datacenter_compat_drivers" in r.unverified:
            # a branch list the data does not hold as checked is not a reason to pull an image
            notes.append(f"{r.release}: its compat branches are unverified; not applied")
            entry = None
        if entry is not None and forward is None and drv < need:
            forward = Choice(
                r,
                FORWARD,
                str(need),
                f"driver {drv} is below {need} (CUDA {r.cuda}) but in R{drv.branch} at or above"
                f" {entry}, a branch the {r.release} notes list for data-center GPUs: the image's"
                " cuda-compat libraries bridge it",
                entry,
            )
        if native is not None:
            break
    if forward is not None and (native is None or forward.release.release > native.release.release):
        return Resolution(framework, driver, datacenter, cuda, forward, native, None, tuple(notes))
    if native is not None:
        return Resolution(framework, driver, datacenter, cuda, native, None, None, tuple(notes))
    oldest = releases[-1] if releases else None
    need = None if oldest is None else ngc.min_driver(oldest, cuda_table)
    why = f"driver {drv} is older than every {framework} release the knowledge base knows"
    why += "" if oldest is None else f" (the oldest, {oldest.release}, needs {need})"
    return Resolution(framework, driver, datacenter, cuda, None, None, why, tuple(notes), True)
