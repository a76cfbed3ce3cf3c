"""CUDA toolkits and nvcc against the loaded driver, through the KB's compatibility table."""

from __future__ import annotations

from typing import Any

from dolmen.checks.context import Context
from dolmen.checks.model import (
    Level,
    Outcome,
    Status,
    check,
    failed,
    passed,
    skipped,
    unknown,
    warned,
)
from dolmen.checks.stack.install import package_command
from dolmen.facts.os import Distribution
from dolmen.facts.reading import unrecorded
from dolmen.kb.cuda import CompatMode, CompatVerdict, parse_toolkit

SOURCE = (
    "KB cuda.toml: CUDA release notes' toolkit driver table and the minor-version "
    "compatibility page (family minimums 580 / 525.60.13 / 450.80.02)"
)


def upgrade_remedy(dist: Distribution | None, v: CompatVerdict, driver_cuda: str | None) -> str:
    """Upgrade the driver to what ``v`` requires, or use a toolkit the driver supports."""
    want = v.required or v.family_min
    branch = want.split(".")[0] if want else None
    older = f"CUDA {driver_cuda} or older" if driver_cuda else "an older CUDA release"
    parsed = parse_toolkit(v.toolkit)
    compat = f"cuda-compat-{parsed[0]}-{parsed[1]}" if parsed else "cuda-compat-<major>-<minor>"
    return (
        f"Upgrade the driver to {want or 'a newer branch'} or later: "
        f"{package_command(dist, branch)}; or build and run with a toolkit this driver supports "
        f"({older}); data-center GPUs can bridge it with forward compatibility "
        f"(package {compat})."
    )


def judge(
    ctx: Context, subject: str, toolkit: str, driver: str, driver_cuda: str | None
) -> Outcome:
    """The outcome of ``toolkit`` on ``driver``: the KB first, the driver's own CUDA version
    (nvidia-smi's cuda_version) when the KB does not know the toolkit."""
    v = ctx.kb.cuda.check(toolkit, driver)
    ev: dict[str, Any] = {
        "toolkit": toolkit,
        "driver": driver,
        "mode": v.mode.value,
        "required": v.required,
        "family_min": v.family_min,
        "driver_cuda": driver_cuda,
    }
    mode, why = v.mode, v.why
    if mode is CompatMode.UNKNOWN and driver_cuda is not None:
        mode, why = _by_driver_cuda(toolkit, driver_cuda, v.why)
        ev["mode"] = f"{mode.value} (by the driver's own CUDA version)"
    if mode is CompatMode.NATIVE:
        return passed(subject, f"CUDA {toolkit} runs natively on driver {driver}: {why}", **ev)
    remedy = upgrade_remedy(ctx.os.distribution, v, driver_cuda)
    if mode is CompatMode.MINOR_VERSION:
        return warned(subject, f"CUDA {toolkit} on driver {driver}: {why}", remedy=remedy, **ev)
    if mode is CompatMode.TOO_OLD:
        return failed(
            subject, f"CUDA {toolkit} is newer than driver {driver}: {why}", remedy=remedy, **ev
        )
    return unknown(subject, f"CUDA {toolkit} on driver {driver}: {why}", **ev)


def _by_driver_cuda(toolkit: str, driver_cuda: str, kb_why: str) -> tuple[CompatMode, str]:
    """Decide from the CUDA version the driver reports when the KB lacks the toolkit."""
    tk, dc = parse_toolkit(toolkit), parse_toolkit(driver_cuda)
    if tk is None or dc is None:
        return CompatMode.UNKNOWN, kb_why
    said = f"{kb_why}; the driver reports CUDA {driver_cuda}"
    if tk[:2] <= dc[:2]:
        return CompatMode.NATIVE, said
    if tk[0] == dc[0]:
        return CompatMode.MINOR_VERSION, f"{said}: minor-version compatibility at best"
    return CompatMode.TOO_OLD, f"{said}: a newer major release than the driver supports"


def _driver(ctx: Context) -> tuple[str | None, str]:
    s, g = ctx.stack, ctx.gpu
    why = s.unread.get("driver_version") or g.unread.get("driver_version") or "missing"
    return s.driver_version or g.driver_version, why


@check(
    "stack.cuda.driver_compat",
    title="Every installed CUDA toolkit runs on the loaded driver",
    level=Level.QUICK,
    needs=("stack", "gpu", "os"),
    when=("nvidia_gpu",),
    remedy="Upgrade the driver to the toolkit's minimum (dolmen kb cuda shows it), or install a "
    "toolkit the driver supports.",
    source=SOURCE,
)
def driver_compat(ctx: Context) -> list[Outcome]:
    """Reads the toolkits under usr/local/cuda* (version.json, version.txt, cuda.h), the
    driver version (proc/driver/nvidia/version, else nvidia-smi) and nvidia-smi's cuda_version;
    judges each toolkit with kb.cuda.check."""
    s, g = ctx.stack, ctx.gpu
    driver, why = _driver(ctx)
    if not s.toolkits and unrecorded(s.unread.get("toolkits")):
        return [skipped("host", s.unread["toolkits"])]
    if not s.toolkits:
        own = f"; driver {driver} supports CUDA {g.cuda_version}" if g.cuda_version else ""
        return [
            skipped("host", f"no CUDA toolkit under /usr/local (containers bring their own){own}")
        ]
    if driver is None:
        return [
            unknown(
                "host",
                f"the driver version could not be read ({why}): no toolkit can be judged",
                toolkits={f"/{t.path}": t.version for t in s.toolkits},
            )
        ]
    out: list[Outcome] = []
    for t in s.toolkits:
        subject = f"cuda:/{t.path}"
        if t.version is None:
            out.append(
                unknown(
                    subject,
                    f"the version of /{t.path} could not be read "
                    "(no version.json, version.txt or include/cuda.h)",
                )
            )
            continue
        out.append(judge(ctx, subject, t.version, driver, g.cuda_version))
    return out


@check(
    "stack.nvcc",
    title="The nvcc on PATH belongs to the default CUDA toolkit and runs on the driver",
    level=Level.QUICK,
    needs=("stack", "gpu", "os"),
    remedy="Put the default toolkit first on PATH (export PATH=/usr/local/cuda/bin:$PATH), or "
    "point /usr/local/cuda at the toolkit you build with (update-alternatives --config cuda); "
    "remove a distribution nvcc that shadows NVIDIA's (sudo apt-get remove nvidia-cuda-toolkit).",
    source=SOURCE,
)
def nvcc(ctx: Context) -> list[Outcome]:
    """Reads nvcc --version, the usr/local/cuda link and the toolkits' versions, and the
    driver version for kb.cuda.check of nvcc's release."""
    s, g = ctx.stack, ctx.gpu
    release = s.nvcc_release
    if release is None:
        why = s.unread.get("nvcc_version", "missing")
        if unrecorded(why):
            return [skipped("host", why)]
        if why.startswith("missing"):
            return [skipped("host", "nvcc is not installed (or not on PATH)")]
        return [unknown("host", f"nvcc --version could not be read: {why}")]
    toolkits = {f"/{t.path}": t.version for t in s.toolkits}
    ev: dict[str, Any] = {
        "nvcc": s.nvcc_version,
        "cuda_default": s.cuda_default,
        "toolkits": toolkits,
    }
    found: list[tuple[Status, str, str | None]] = []
    default = toolkits.get(s.cuda_default or "")
    same = [p for p, v in toolkits.items() if v and _xy(v) == release]
    if default and _xy(default) != release:
        found.append(
            (
                Status.WARN,
                f"nvcc is CUDA {release} but /usr/local/cuda is CUDA {default}: builds would mix "
                "the compiler of one release with the headers and libraries of another",
                None,
            )
        )
    elif any(toolkits.values()) and not same:
        found.append(
            (
                Status.WARN,
                f"nvcc is CUDA {release}, none of the installed toolkits "
                f"({', '.join(v for v in toolkits.values() if v)}): likely a distribution "
                "package (nvidia-cuda-toolkit) earlier on PATH",
                None,
            )
        )
    driver, driver_why = _driver(ctx)
    if driver is None and not toolkits:
        # Nothing to compare nvcc with: "matches" would be said of nothing.
        unseen = [w for w in (s.unread.get("toolkits", ""), driver_why) if unrecorded(w)]
        if unseen:
            return [skipped("host", f"nvcc {s.nvcc_version}: {'; '.join(unseen)}", **ev)]
    if driver is not None:
        o = judge(ctx, "host", release, driver, g.cuda_version)
        ev["driver"] = driver
        ev["mode"] = o.evidence.get("mode")
        if o.status is Status.FAIL and same:  # stack.cuda.driver_compat fails that toolkit
            found.append((Status.WARN, f"{o.summary} (see stack.cuda.driver_compat)", o.remedy))
        elif o.status in (Status.FAIL, Status.WARN):
            found.append((o.status, f"programs nvcc builds: {o.summary}", o.remedy))
    if not found:
        compared = " and ".join(
            w for w, there in (("the toolkits", toolkits), ("the driver", driver)) if there
        )
        tail = f"matches {compared}" if compared else "(no toolkit and no driver to compare)"
        return [passed("host", f"nvcc {s.nvcc_version} {tail}", **ev)]
    worst = Status.FAIL if any(st is Status.FAIL for st, _, _ in found) else Status.WARN
    summary = "; ".join(msg for _, msg, _ in found)
    remedy = next((r for st, _, r in found if st is worst and r), None)
    maker = failed if worst is Status.FAIL else warned
    return [maker("host", summary, remedy=remedy, **ev)]


def _xy(version: str) -> str:
    """ "12.4" of "12.4.1"."""
    return ".".join(version.split(".")[:2])
