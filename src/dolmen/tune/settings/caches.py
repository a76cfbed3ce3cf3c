"""``[caches]``: persistent compile and autotune caches on fast local storage.

``folder = "auto"`` (or an absolute path) in a profile gives every user of the host
warm caches that survive reboots: the CUDA driver's JIT cache (``CUDA_CACHE_PATH``,
``CUDA_CACHE_MAXSIZE``, ``CUDA_CACHE_DISABLE`` unset), Triton's kernel cache
(``TRITON_CACHE_DIR``), TorchInductor's FX graph and autotuning caches
(``TORCHINDUCTOR_CACHE_DIR``, ``TORCHINDUCTOR_FX_GRAPH_CACHE=1``) and a folder for
TensorRT timing caches (``DOLMEN_TENSORRT_CACHE_DIR``: TensorRT reads no variable,
scripts pass it to ``trtexec --timingCacheFile`` or Torch-TensorRT's
``timing_cache_path``). Their defaults are per user in /tmp (Inductor: emptied at boot)
or the home folder (often NFS).

Two targets per entry:

- the root folder, mode 1777 (sticky, as /tmp): each user's caches go to
  ``<root>/<uid>``, which the user's own login makes, mode 0700. Compiled kernels are
  code the next process loads, so a user must never load another's: a ``<uid>`` folder
  that someone else made (or a link) is refused and the tools keep their defaults.
- ``/etc/profile.d/90-dolmen-caches.sh``, sourced by every login shell (``/etc/profile``
  on Ubuntu and DGX OS; an ssh login, ``bash -l``, a Slurm job inherits the submitting
  shell's environment). Not ``/etc/environment.d``: that is read by the systemd user
  manager only, and as ``KEY=VALUE`` lines it cannot make the per-user folder or check
  who owns it; ``/etc/environment`` (pam_env) is one file the distribution owns.

The folder's filesystem is judged from the mount table: a network filesystem (NFS,
Lustre, GPFS...) is refused (slow, and shared by nodes whose driver or torch may
differ), so are tmpfs (emptied at every boot) and read-only mounts. ``auto`` takes the
first local data mount of /raid (DGX OS's data RAID), /data, /scratch, /local, else
/var/cache/dolmen. Rollback removes the root folder apply made, caches included
(they are rebuilt by the next compile), and the profile script.

cuDNN's benchmark mode is not a host setting (``torch.backends.cudnn.benchmark = True``
in the training script, autotuned per process): the plan gives it as guidance.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dolmen.facts.storage import Mount, parse_mounts
from dolmen.host import Host
from dolmen.tune.model import Action, Change, Effect, Reading, Target
from dolmen.tune.settings.base import Entry, capture_file, choice_error, restore_file
from dolmen.tune.settings.dropin import HEADER, DropIn, read_whole
from dolmen.tune.settings.limits import size_bytes
from dolmen.workloads.caches import CACHES

SCRIPT = "etc/profile.d/90-dolmen-caches.sh"
ROOT_MODE = 0o1777
# The CUDA driver's JIT cache: 4 GiB is the largest CUDA_CACHE_MAXSIZE it takes (CUDA
# programming guide, environment variables appendix [R]).
CUDA_MAX = 4 << 30
AUTO_MOUNTS = ("/raid", "/data", "/scratch", "/local")
AUTO_FALLBACK = "/var/cache/dolmen"
# systemd-tmpfiles ages these out (tmp.conf: 10 and 30 days), /run and /dev are tmpfs.
REFUSED_PREFIXES = ("/tmp", "/var/tmp", "/run", "/dev", "/proc", "/sys")
_PATH = re.compile(r"^/[A-Za-z0-9_.+\-/]*$")  # written into a shell script: nothing to quote
GUIDANCE = (
    "cuDNN autotuning is a framework call, not a host setting: "
    "torch.backends.cudnn.benchmark = True in the training script (per process, fixed shapes)",
    "TensorRT reads no cache variable: pass --timingCacheFile=$DOLMEN_TENSORRT_CACHE_DIR/"
    "timing.cache to trtexec, timing_cache_path= to torch_tensorrt.compile",
)


def parse_size(value: Any) -> int:
    """Bytes from an integer or a size with a unit (``"4GiB"``); ValueError otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    size = size_bytes(value)
    if size is None:
        raise ValueError(f'cuda_max_size is bytes or a size with a unit ("4GiB"), not {value!r}')
    return size


def env_script(root: str, caches: tuple[str, ...], max_size: int) -> str:
    """The profile.d script: the user's own ``<root>/<uid>``, then the variables."""
    lines = [
        f'_dolmen_cache="{root}/$(id -u)"',
        "# A folder of this name that is not this user's own (or is a link) is refused.",
        'if { [ -d "$_dolmen_cache" ] && [ ! -L "$_dolmen_cache" ] && [ -O "$_dolmen_cache" ]; }'
        ' || mkdir -m 0700 "$_dolmen_cache" 2>/dev/null; then',
    ]
    for name in caches:
        lines.append(f'    export {CACHES[name]}="$_dolmen_cache/{name}"')
        if name == "cuda":
            lines += [f"    export CUDA_CACHE_MAXSIZE={max_size}", "    unset CUDA_CACHE_DISABLE"]
        elif name == "inductor":
            lines.append("    export TORCHINDUCTOR_FX_GRAPH_CACHE=1")
        elif name == "tensorrt":  # TensorRT does not make the folder of a cache file
            lines.append('    mkdir -p "$_dolmen_cache/tensorrt" 2>/dev/null')
    lines += ["fi", "unset _dolmen_cache"]
    return (
        HEADER + "# Persistent compile caches (dolmen tune [caches]).\n" + "\n".join(lines) + "\n"
    )


def mount_of(mounts: list[Mount], path: str) -> Mount | None:
    """The mount a path lives on: the longest mount point that is a prefix of it."""
    best: Mount | None = None
    for m in mounts:
        point = m.mountpoint.rstrip("/")
        if (path == point or path.startswith(point + "/")) and (
            best is None or len(point) > len(best.mountpoint.rstrip("/"))
        ):
            best = m
    return best


def refusal(mount: Mount, path: str) -> str | None:
    """Why compile caches must not go on ``mount``, or None."""
    where = f"{path} is on {mount.fstype} ({mount.mountpoint})"
    if mount.kind == "network":
        return (
            f"{where}, a network filesystem: caches there are slow, lock across nodes and "
            "are shared by hosts whose driver or torch may differ; choose a local data mount"
        )
    if mount.kind == "memory":
        return f"{where}, in memory: emptied at every boot, the caches would start cold"
    if mount.read_only:
        return f"{where}, mounted read-only"
    return None


class Caches(DropIn):
    """Compile caches: a sticky root folder and the login script (module docstring)."""

    section = "caches"
    keys = ("folder",)
    title = "persistent compile caches (CUDA JIT, Triton, TorchInductor, TensorRT)"
    persists = True  # a folder and a profile.d file
    extra_fields = frozenset({"cuda_max_size", "caches"})

    def validate(self, key: str, value: Any, fields: Mapping[str, Any]) -> str:
        if not isinstance(value, str) or not (value == "auto" or _PATH.match(value)):
            raise ValueError(f'folder is "auto" or an absolute path of plain characters: {value!r}')
        path = value.rstrip("/") or "/"
        if ".." in path.split("/") or path == "/":
            raise ValueError(f"folder {value!r} is not a folder of its own")
        if path.startswith(REFUSED_PREFIXES):
            raise ValueError(
                f"folder {value!r} is emptied by the system (tmpfs, tmpfiles.d ageing): "
                "use a data mount or /var/cache"
            )
        size = parse_size(fields.get("cuda_max_size", CUDA_MAX))
        if not 1 << 20 <= size <= CUDA_MAX:
            raise ValueError(f"cuda_max_size must be 1 MiB..4 GiB (the driver's limit): {size}")
        chosen = fields.get("caches", list(CACHES))
        if not isinstance(chosen, list) or not chosen:
            raise ValueError(f"caches is a list of: {', '.join(CACHES)}")
        for name in chosen:
            if name not in CACHES:
                raise choice_error("cache", name, list(CACHES))
        return path

    def targets(self, host: Host, entry: Entry) -> list[Target] | str:
        text = host.read_opt("proc/self/mounts") or host.read_opt("proc/mounts")
        mounts = parse_mounts(text) if text else []
        root = entry.value if entry.value != "auto" else _auto(mounts)
        fs = "not judged: no mount table (proc/self/mounts) to read"
        mount = mount_of(mounts, root)
        if mount is not None:
            why = refusal(mount, root)
            if why:
                return why
            fs = f"on {mount.fstype} ({mount.mountpoint})"
        if (crowded := _crowded(host, root.lstrip("/"))) is not None:
            return crowded
        chosen = tuple(n for n in CACHES if n in entry.fields.get("caches", list(CACHES)))
        size = parse_size(entry.fields.get("cuda_max_size", CUDA_MAX))
        common = (entry.origin, entry.source)
        return [
            Target(
                self.section,
                entry.key,
                f"{root} (cache root)",
                f"{ROOT_MODE:o}",
                root.lstrip("/"),
                *common,
                {"kind": "folder", "filesystem": fs},
            ),
            Target(
                self.section,
                entry.key,
                f"/{SCRIPT}",
                env_script(root, chosen, size),
                SCRIPT,
                *common,
                {"kind": "env", "restart": "new logins"},
            ),
        ]

    def read(self, host: Host, target: Target) -> Reading:
        if target.extra.get("kind") != "folder":
            got = read_whole(host, target.path)
            effect = f"takes effect for {target.extra.get('restart')}"
            return Reading(got.value, got.skip, notes=(effect, *GUIDANCE, *_overrides(host)))
        notes = (f"filesystem {target.extra.get('filesystem', 'not judged')}",)
        if not host.exists(target.path) and host.readlink(target.path) is None:
            return Reading(None, notes=notes)
        if host.readlink(target.path) is not None or not host.is_dir(target.path):
            return Reading(None, skip=f"/{target.path} exists and is not a folder", notes=notes)
        return Reading(f"{host.mode(target.path) or 0:o}", notes=notes)

    def plan(self, target: Target, reading: Reading) -> Change:
        change = super().plan(target, reading)
        if target.extra.get("kind") == "folder" or change.action is Action.SKIP:
            return change
        return Change(target, change.current, change.action, Effect.RESTART, notes=change.notes)

    def same(self, current: str, desired: str) -> bool:
        if re.fullmatch(r"[0-7]{3,4}", desired) and re.fullmatch(r"[0-7]{3,4}", current):
            return int(current, 8) == int(desired, 8)
        return current == desired

    def show(self, value: str | None) -> str:
        if value is not None and re.fullmatch(r"[0-7]{3,4}", value):
            return f"folder, mode {value}"
        return super().show(value)

    def capture(self, host: Host, change: Change) -> dict[str, Any]:
        if change.target.extra.get("kind") != "folder":
            return capture_file(host, change.target.path)
        rel = change.target.path
        if host.is_dir(rel):
            return {"folder": rel, "mode": host.mode(rel)}
        # Absent (read refused anything else): its missing parents, as for a file.
        missing = capture_file(host, rel).get("missing_dirs", [])
        return {"folder": rel, "absent": True, "missing_dirs": missing}

    def apply(self, host: Host, change: Change) -> None:
        if change.target.extra.get("kind") == "folder":
            host.make_dir(change.target.path, int(change.target.desired, 8))
        else:
            super().apply(host, change)

    def revert(self, host: Host, change: Change, saved: Mapping[str, Any]) -> None:
        if change.target.extra.get("kind") != "folder":
            restore_file(host, change.target.path, saved)
            return
        if not saved.get("absent"):
            host.make_dir(change.target.path, int(saved["mode"]))
            return
        host.remove_tree(change.target.path)
        restore_file(host, change.target.path, saved)  # absent: the parents apply made go too


def _crowded(host: Host, rel: str) -> str | None:
    """Why an existing folder that holds files (/etc, /home) must not become the 1777 root:
    anyone could plant files among them, and rollback only puts the mode back."""
    if host.readlink(rel) is not None or not host.is_dir(rel) or not host.listdir(rel):
        return None  # absent, empty, or not a folder (read() refuses that)
    mode = host.mode(rel) or 0
    why = f"/{rel} already holds files (mode {mode:o}): making it world-writable (1777) would"
    why += " let every user add files among them; name a new or empty folder (/raid/dolmen-cache)"
    return None if mode == ROOT_MODE else why  # 1777: an earlier apply's, or an admin's


def _auto(mounts: list[Mount]) -> str:
    for point in AUTO_MOUNTS:
        m = next((m for m in mounts if m.mountpoint == point), None)
        if m is not None and refusal(m, point) is None and m.kind == "disk":
            return f"{point}/dolmen-cache"
    return AUTO_FALLBACK


def _overrides(host: Host) -> list[str]:
    """Settings elsewhere that undo the script's: pam_env's CUDA_CACHE_DISABLE, or a
    profile.d script read after ours that sets the same variables."""
    notes = []
    for n, line in enumerate((host.read_opt("etc/environment") or "").splitlines(), 1):
        if re.match(r"\s*(export\s+)?CUDA_CACHE_DISABLE\s*=\s*\"?1", line):
            notes.append(
                f"line {n} of /etc/environment sets CUDA_CACHE_DISABLE=1 for every session;"
                " the script unsets it in login shells only: remove that line"
            )
    ours = SCRIPT.rsplit("/", 1)[-1]
    for path in host.glob("etc/profile.d/*.sh"):
        if path.rsplit("/", 1)[-1] <= ours:
            continue
        text = host.read_opt(path) or ""
        for var in (*CACHES.values(), "CUDA_CACHE_DISABLE"):
            if re.search(rf"\b{var}=", text):
                notes.append(f"/{path} also sets {var} and is read later")
    return notes
