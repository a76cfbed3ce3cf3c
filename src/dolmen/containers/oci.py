"""``docker run`` and ``podman run`` for a GPU job (the rules are in plan.py's docstring)."""

from __future__ import annotations

from dolmen.containers.plan import (
    CDI_REMEDY,
    MEMLOCK,
    NOFILE,
    STACK,
    Plan,
    Request,
    env,
    gpu_list,
    mounts,
    nccl_notes,
)
from dolmen.containers.site import UNLIMITED, Site

# Without CAP_SYS_RESOURCE, podman starts runc with at most this many processes whatever
# this session's hard limit is (seen with podman 4.3 on Debian 12: 32769 is refused with
# "error setting rlimit type 6: operation not permitted").
PODMAN_NPROC = 32768


def _limit(value: int) -> str:
    return "-1" if value == UNLIMITED else str(value)


def _fits(want: int, hard: int | None) -> int:
    """``want`` within ``hard`` (None: unknown hard limit, take ``want``)."""
    if hard is None or hard == UNLIMITED:
        return want
    if want == UNLIMITED:
        return hard
    return min(want, hard)


def _ulimits(runtime: str, site: Site, notes: list[str]) -> list[str]:
    if runtime == "docker" or site.can_raise_limits:
        # dockerd applies limits with its own (root) capabilities; so does a podman that
        # holds CAP_SYS_RESOURCE
        memlock, stack = MEMLOCK, STACK
        nofile, nproc = NOFILE, UNLIMITED
    else:
        hard = site.hard_limits
        memlock = _fits(MEMLOCK, hard.get("memlock"))
        stack = _fits(STACK, hard.get("stack"))
        nofile = _fits(NOFILE, hard.get("nofile"))
        nproc = _fits(PODMAN_NPROC, hard.get("nproc")) if runtime == "podman" else UNLIMITED
        if memlock != MEMLOCK:
            notes.append(
                f"memlock capped at this session's hard limit ({memlock} bytes, not unlimited):"
                " podman cannot raise it without CAP_SYS_RESOURCE; RDMA memory registration"
                " may fail. Raise it (LimitMEMLOCK=infinity, limits.conf memlock unlimited) or"
                " run as root"
            )
        if stack != STACK:
            notes.append(f"stack capped at this session's hard limit ({stack} bytes)")
        if not hard:
            notes.append("this session's hard limits are unknown (no /proc/self/limits)")
    if runtime == "docker":  # NGC's own run line
        return ["--ulimit", f"memlock={_limit(memlock)}", "--ulimit", f"stack={_limit(stack)}"]
    out = ["--ulimit", f"memlock={_limit(memlock)}:{_limit(memlock)}"]
    out += ["--ulimit", f"stack={_limit(stack)}:{_limit(stack)}"]
    if runtime == "podman":  # any --ulimit replaces podman's default_ulimits
        out += ["--ulimit", f"nofile={_limit(nofile)}:{_limit(nofile)}"]
        out += ["--ulimit", f"nproc={_limit(nproc)}:{_limit(nproc)}"]
    return out


def _gpus(
    runtime: str, req: Request, site: Site, notes: list[str], problems: list[str]
) -> tuple[list[str], str]:
    if req.gpus == "none":
        return [], "none"
    wanted = gpu_list(req)
    cdi = runtime == "podman" or (site.docker_cdi is True and bool(site.cdi_devices))
    if not cdi:
        notes.append("GPUs through the NVIDIA Container Toolkit's hook (docker --gpus)")
        value = "all" if not wanted else f'"device={",".join(wanted)}"'
        return ["--gpus", value], "gpus-flag"
    if not site.cdi_devices:
        problems.append(
            f"no NVIDIA CDI spec in /etc/cdi or /var/run/cdi: {runtime} reaches GPUs through"
            f" CDI. Generate it: {CDI_REMEDY}"
        )
        return [], "cdi"
    names = [f"nvidia.com/gpu={g}" for g in wanted] or ["nvidia.com/gpu=all"]
    for n in names:
        if n not in site.cdi_devices:
            problems.append(
                f"{n} is not in the CDI specs ({', '.join(site.cdi_specs)}: "
                f"{', '.join(site.cdi_devices)}); regenerate them: {CDI_REMEDY}"
            )
    notes.append(f"GPUs through CDI ({', '.join(site.cdi_specs)})")
    out: list[str] = []
    for n in names:
        out += ["--device", n]
    return out, "cdi"


def plan_oci(runtime: str, req: Request, site: Site) -> Plan:
    """``<runtime> run --rm ...`` for ``req``."""
    notes: list[str] = []
    problems: list[str] = []
    if runtime not in site.installed:
        problems.append(f"{runtime} is not on this host's PATH")
    argv = [runtime, "run", "--rm"]
    if req.name:
        argv += ["--name", req.name]
    gpus, mode = _gpus(runtime, req, site, notes, problems)
    argv += gpus
    if req.shm_size is not None:
        argv += ["--shm-size", req.shm_size]  # podman refuses it with --ipc=host
    else:
        argv += ["--ipc=host"]
    argv += _ulimits(runtime, site, notes)
    if site.rdma_devices:
        argv += ["--cap-add", "IPC_LOCK"]
        for dev in site.rdma_devices:
            argv += ["--device", dev]
        notes.append(f"RDMA devices: {', '.join(site.rdma_devices)}")
    if req.network:
        argv += ["--network", req.network]
    for src, dst, mode_ in mounts(req, site):
        argv += ["-v", f"{src}:{dst}:{mode_}"]
    notes += nccl_notes(site)
    for e in env(req, site):
        argv += ["-e", e]
    argv += [req.image, *req.command]
    return Plan(runtime, tuple(argv), mode, tuple(notes), tuple(problems))
