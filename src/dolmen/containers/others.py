"""apptainer/singularity, enroot and Slurm's pyxis: the same GPU job on HPC runtimes.

These run the container in the caller's session: the host's IPC namespace and /dev/shm
are shared and the caller's limits apply (no ``--ulimit``: the plan names a memlock
below unlimited instead), so what is left is the GPUs, the mounts and the environment.
"""

from __future__ import annotations

from dolmen.containers.image_ref import SCHEMES
from dolmen.containers.plan import Plan, Request, env, gpu_list, mounts, nccl_notes
from dolmen.containers.site import UNLIMITED, Site


def _limits_note(site: Site, notes: list[str]) -> None:
    memlock = site.hard_limits.get("memlock")
    if memlock is not None and memlock != UNLIMITED:
        notes.append(
            f"the container inherits this session's memlock hard limit ({memlock} bytes, not"
            " unlimited): RDMA registration may fail; raise it (limits.conf, LimitMEMLOCK)"
        )


def _apptainer(runtime: str, req: Request, site: Site, notes: list[str]) -> tuple[list[str], str]:
    image = req.image
    if not image.startswith(SCHEMES) and not image.endswith(".sif") and not image.startswith("/"):
        image = f"docker://{image}"
    argv = [runtime, "exec" if req.command else "run"]
    mode = "none"
    if req.gpus != "none":
        argv.append("--nv")
        mode = "nv"
        if gpu_list(req):
            argv += ["--env", f"CUDA_VISIBLE_DEVICES={','.join(gpu_list(req))}"]
    for src, dst, m in mounts(req, site):
        argv += ["--bind", f"{src}:{dst}:{m}"]
    for e in env(req, site):
        argv += ["--env", e]
    notes.append(f"{runtime} shares the host's IPC namespace, /dev/shm and /dev (RDMA included)")
    return [*argv, image, *req.command], mode


def _enroot(
    req: Request, site: Site, notes: list[str], problems: list[str]
) -> tuple[list[str], str]:
    image = req.image
    if ("/" in image or ":" in image) and not image.startswith("/") and not image.endswith(".sqsh"):
        problems.append(
            f"enroot starts imported containers, not registry images: enroot import "
            f"'docker://{_pyxis_image(req.image)}' && enroot create --name NAME <file>.sqsh,"
            " then run NAME"
        )
    argv = ["enroot", "start", "--rw"]
    mode = "none"
    if req.gpus != "none":
        argv += ["--env", f"NVIDIA_VISIBLE_DEVICES={','.join(gpu_list(req)) or 'all'}"]
        mode = "env"
    if site.rdma_devices:
        argv += ["--env", "MELLANOX_VISIBLE_DEVICES=all"]  # enroot's mellanox hook
        notes.append("RDMA devices through enroot's mellanox hook (MELLANOX_VISIBLE_DEVICES)")
    for src, dst, m in mounts(req, site):
        argv += ["--mount", f"{src}:{dst}:{'ro,' if m == 'ro' else ''}x-create=auto,rbind"]
    for e in env(req, site):
        argv += ["--env", e]
    return [*argv, req.image, *req.command], mode


def _pyxis_image(image: str) -> str:
    """pyxis/enroot spell a registry with '#': nvcr.io#nvidia/pytorch:24.05-py3."""
    first, sep, rest = image.partition("/")
    return f"{first}#{rest}" if sep and ("." in first or ":" in first) else image


def _pyxis(req: Request, site: Site, notes: list[str]) -> tuple[list[str], str]:
    argv = ["srun", f"--container-image={_pyxis_image(req.image)}"]
    binds = [f"{s}:{d}:{m}" for s, d, m in mounts(req, site)]
    if binds:
        argv.append(f"--container-mounts={','.join(binds)}")
    if req.name:
        argv.append(f"--container-name={req.name}")
    variables = env(req, site)
    if variables:
        argv.append(f"--export=ALL,{','.join(variables)}")
    notes.append("GPUs are the Slurm allocation's (--gres/--gpus on salloc/sbatch)")
    if req.gpus not in ("all", "none"):
        notes.append("--gpus LIST is ignored under pyxis: ask Slurm for the GPUs")
    return [*argv, *req.command], "allocation"


def plan_other(runtime: str, req: Request, site: Site) -> Plan:
    """The command for apptainer, singularity, enroot or pyxis."""
    notes: list[str] = []
    problems: list[str] = []
    if runtime not in site.installed:
        what = "pyxis (Slurm's spank_pyxis.so with enroot)" if runtime == "pyxis" else runtime
        problems.append(f"{what} is not on this host")
    if req.network:
        notes.append(f"--network {req.network} is docker/podman only: ignored")
    if req.shm_size:
        notes.append(f"--shm-size is docker/podman only: {runtime} uses the host's /dev/shm")
    if runtime in ("apptainer", "singularity"):
        argv, mode = _apptainer(runtime, req, site, notes)
    elif runtime == "enroot":
        argv, mode = _enroot(req, site, notes, problems)
    else:
        argv, mode = _pyxis(req, site, notes)
        if not req.command:
            problems.append("pyxis runs a command: give one after --")
    notes += nccl_notes(site)
    _limits_note(site, notes)
    return Plan(runtime, tuple(argv), mode, tuple(notes), tuple(problems))
