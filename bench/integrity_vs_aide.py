"""`dolmen integrity verify` against `aide --check` on the same ~20,000-file tree.

    .venv/bin/python bench/integrity_vs_aide.py [--files N] [--runs N]

A tree shaped like a GPU node's boot chain and AI stack is made in a temporary folder
(about 2.1 GB: a kernel and an initrd, the EFI partition, modprobe.d, ~20,000 modules of
sizes drawn from a seeded log-normal (median 8 KiB) plus a 70 MB nvidia.ko, and libcuda,
libnvidia-*, cuDNN, NCCL and TensorRT libraries at about their packaged sizes), sealed
(`dolmen integrity seal --root`) and put into AIDE 0.18's database (`aide --init` with a
private config whose rule reads what a verify compares: p+u+g+s+n+l+ftype+sha256). A
seeded mutation table is applied (content byte, mode, owner, added, removed, symlink
retarget, hard link), then each tool checks the tree:

    aide --check                   its default, one hashing worker (num_workers = 1)
    aide --check --workers=W       as many workers as dolmen's hashing pool
    dolmen integrity verify --full every file hashed again
    dolmen integrity verify        incremental: unchanged (dev, inode, size, mtime, ctime)

warm (medians of --runs, interleaved) and cold. Cold means the kernel's caches dropped
(`/proc/sys/vm/drop_caches`), done only where this process may write it; otherwise the
bench prints "cold not measurable" and why, and runs each tool with the tree's file
data evicted from the page cache instead (posix_fadvise DONTNEED after a sync), labelled
"data-cold": inodes and dentries stay cached, so it is not the cold number. dolmen runs
with its bytecode cached, as an installed package has it. CPU seconds (user + system,
all threads) are printed beside the warm times: the machine may be shared.
Both tools must report the same set of mutated paths (printed); exit 1 when they do
not, or when a target is missed (full >= 2x and incremental >= 20x faster than
`aide --check` warm).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
KERNEL = "6.8.0-45-generic"
LIB = "usr/lib/x86_64-linux-gnu"
TARGET_FULL, TARGET_INCREMENTAL = 2.0, 20.0
RULE = "p+u+g+s+n+l+ftype+sha256"


def build(root: Path, files: int, rng: random.Random) -> list[str]:
    """The tree; the regular files' host paths (relative) for the mutations."""
    made: list[str] = []

    def put(rel: str, size: int) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as f:
            for _ in range(size >> 23):
                f.write(rng.randbytes(8 << 20))
            f.write(rng.randbytes(size & ((8 << 20) - 1)))
        made.append(rel)

    put(f"boot/vmlinuz-{KERNEL}", 14 << 20)
    put(f"boot/initrd.img-{KERNEL}", 70 << 20)
    put(f"boot/config-{KERNEL}", 280_000)
    put(f"boot/System.map-{KERNEL}", 8 << 20)
    put("boot/grub/grub.cfg", 9_000)
    for rel in ("BOOT/BOOTX64.EFI", "BOOT/fbx64.efi", "ubuntu/shimx64.efi", "ubuntu/grubx64.efi"):
        put(f"boot/efi/EFI/{rel}", 950_000)
    (root / "proc").mkdir()
    (root / "proc/cmdline").write_text(f"BOOT_IMAGE=/vmlinuz-{KERNEL} root=UUID=1 ro\n")
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text(KERNEL + "\n")
    for name in ("nvidia.conf", "blacklist-nouveau.conf", "nvidia-fabricmanager.conf"):
        put(f"etc/modprobe.d/{name}", 200)
    # The driver's and the AI stack's libraries at about their sizes in CUDA 12 / driver
    # 550 / cuDNN 9 / NCCL 2.21 / TensorRT 10 packages (MB): few files, most of the bytes.
    libs = {"libcuda.so": 30, "libnvidia-ml.so": 2, "libnvidia-ptxjitcompiler.so": 30}
    libs |= {"libnvidia-gpucomp.so": 80, "libnvidia-nvvm.so": 80, "libnvidia-rtcore.so": 70}
    libs |= {f"libnvidia-{n}.so": 1 for n in ("cfg", "opencl", "fbc", "allocator", "container")}
    libs |= {"libnccl.so": 230, "libnvinfer.so": 250, "libnvinfer_plugin.so": 40}
    libs |= {"libnvonnxparser.so": 5, "libcudnn.so": 1, "libcudnn_graph.so": 2}
    libs |= {"libcudnn_engines_precompiled.so": 580, "libcudnn_adv.so": 250}
    libs |= {"libcudnn_ops.so": 100, "libcudnn_engines_runtime_compiled.so": 20}
    for lib, mb in libs.items():
        put(f"{LIB}/{lib}.550.54.15", mb << 20)
        os.symlink(f"{lib}.550.54.15", root / LIB / f"{lib}.1")
    put(f"lib/modules/{KERNEL}/updates/dkms/nvidia.ko", 70 << 20)
    dirs = [f"lib/modules/{KERNEL}/kernel/drivers/{a}/{b}" for a in range(40) for b in range(12)]
    for i in range(files - len(made)):
        size = min(int(rng.lognormvariate(9.0, 1.3)), 4 << 20)  # median 8 KiB, like .ko.zst
        put(f"{dirs[i % len(dirs)]}/m{i}.ko", size)
    return made


def mutate(root: Path, regular: list[str], rng: random.Random) -> set[str]:
    """The seeded mutation table; the host paths it touched."""
    mods = [r for r in regular if r.endswith(".ko")]
    content, mode, owner, removed, linked = rng.sample(mods, 5)
    p = root / content
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x40
    st = p.stat()
    p.write_bytes(bytes(data))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    os.chmod(root / mode, 0o666)
    os.chown(root / owner, 1234, 1234)
    added = str(Path(removed).parent / "rootkit.ko")
    (root / added).write_bytes(b"\x7fELF" + rng.randbytes(7000))
    (root / removed).unlink()
    retarget = f"{LIB}/libcuda.so.1"
    (root / retarget).unlink()
    os.symlink("/tmp/libcuda.so.evil", root / retarget)
    hardlink = str(Path(linked).parent / "hardlink.ko")
    os.link(root / linked, root / hardlink)
    print("mutations (seeded):")
    rows = [("content byte", content), ("mode 0666", mode), ("owner 1234:1234", owner),
            ("added", added), ("removed", removed), ("symlink retarget", retarget),
            ("hardlink", f"{hardlink} -> {linked}")]  # fmt: skip
    for what, where in rows:
        print(f"  {what:<17} /{where}")
    return {f"/{p}" for p in (content, mode, owner, added, removed, retarget, hardlink, linked)}


def aide_config(tmp: Path, root: Path) -> Path:
    conf = tmp / "aide.conf"
    lines = [
        f"database_in=file:{tmp}/aide.db",
        f"database_out=file:{tmp}/aide.db.new",
        "gzip_dbout=no",
        "report_url=stdout",
        "report_level=list_entries",
        f"DOLMEN = {RULE}",
        "DIRS = p+u+g+ftype",
        *(
            f"{root}/{d} f,l DOLMEN"
            for d in ("boot", f"lib/modules/{KERNEL}", "etc/modprobe.d", LIB)
        ),
        *(f"{root}/{d} d DIRS" for d in ("boot", f"lib/modules/{KERNEL}", "etc/modprobe.d", LIB)),
        f"{root}/proc/cmdline f DOLMEN",
    ]
    conf.write_text("\n".join(lines) + "\n")
    return conf


def aide_paths(report: str, root: Path) -> set[str]:
    """Every path AIDE lists as added, removed or changed, as a host path."""
    out = set()
    for m in re.finditer(rf"^\S+\s*: ({re.escape(str(root))}/\S+)$", report, re.M):
        out.add(m.group(1)[len(str(root)) :])
    return out


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall seconds of one run and its result; its CPU seconds (user + system, all of
    its threads) go to ``LAST_CPU``: the machine is shared, and CPU time is what a
    crowded machine changes least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    LAST_CPU[0] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, res


LAST_CPU = [0.0]


def drop_caches() -> str | None:
    """None when the kernel dropped its caches, else why it could not."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        return f"writing /proc/sys/vm/drop_caches: {e.strerror}"
    return None


def evict(paths: list[Path]) -> None:
    """Evict the file data of ``paths`` from the page cache (clean pages only: sync first)."""
    os.sync()
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("aide") is None:
        print("aide is not installed (apt-get install aide): nothing to compare against")
        return 1
    from dolmen.integrity.scan import default_workers
    from dolmen.keys.file import FileKeyProvider

    workers = default_workers()
    rng = random.Random(12)
    with tempfile.TemporaryDirectory(prefix="dib-", dir="/tmp") as t:
        tmp = Path(t)
        root = tmp / "root"
        regular = build(root, args.files, rng)
        size = sum((root / r).stat().st_size for r in regular)
        print(f"tree: {len(regular)} files, {size / 1e6:.0f} MB, {root}")
        env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
        # Bytecode as an installed package has it (the first, untimed run writes it).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pyc")
        env |= {"DOLMEN_STATE_DIR": str(tmp / "state"), "DOLMEN_CONFIG_DIR": str(tmp / "cfg")}
        key = tmp / "keys" / "site.key"
        FileKeyProvider.generate(key)
        trust = key.with_name("site.key.pub")
        dolmen = [sys.executable, "-m", "dolmen.cli.main", "integrity"]
        manifest = tmp / "integrity.manifest"
        t_seal, res = timed(
            [*dolmen, "seal", "-o", str(manifest), "--root", str(root), "--key", str(key)], env
        )
        assert res.returncode == 0, res.stderr
        conf = aide_config(tmp, root)
        t_init, res = timed(["aide", f"--config={conf}", "--init"], env)
        assert res.returncode == 0, res.stdout + res.stderr
        (tmp / "aide.db.new").rename(tmp / "aide.db")
        print(f"seal: dolmen {t_seal:.2f} s, aide --init {t_init:.2f} s")
        expected = mutate(root, regular, rng)

        verify = [*dolmen, "verify", str(manifest), "--trusted-keys", str(trust), "--json"]
        tools = {
            "aide --check": ["aide", f"--config={conf}", "--check"],
            f"aide --check --workers={workers}": [
                "aide",
                f"--config={conf}",
                "--check",
                f"--workers={workers}",
            ],
            "verify --full": [*verify, "--full"],
            "verify (incremental)": verify,
        }
        found: dict[str, set[str]] = {}
        codes: dict[str, int] = {}
        warm: dict[str, list[float]] = {name: [] for name in tools}
        cpu: dict[str, list[float]] = {name: [] for name in tools}
        for name, argv in tools.items():  # one untimed run each: caches and bytecode warm
            _, res = timed(argv, env)
            codes[name] = res.returncode
            found[name] = (
                aide_paths(res.stdout, root)
                if name.startswith("aide")
                else {c["path"] for c in json.loads(res.stdout)["changes"]}
            )
        for _ in range(args.runs):
            for name, argv in tools.items():
                warm[name].append(timed(argv, env)[0])
                cpu[name].append(LAST_CPU[0])
        med = {name: statistics.median(v) for name, v in warm.items()}
        mcpu = {name: statistics.median(v) for name, v in cpu.items()}
        cold_why = drop_caches()
        cold: dict[str, float] = {}
        data_cold: dict[str, float] = {}
        everything = [root / r for r in regular] + [manifest, tmp / "aide.db"]
        for name, argv in tools.items():
            if cold_why is None:
                drop_caches()
                cold[name] = timed(argv, env)[0]
            else:
                evict(everything)
                data_cold[name] = timed(argv, env)[0]

        aide = med["aide --check"]
        load = os.getloadavg()[0]
        print(
            f"\nwarm, median of {args.runs} (hashing workers: dolmen {workers}; "
            f"{os.cpu_count()} cores, load average {load:.1f}):"
        )
        for name in tools:
            print(
                f"  {name:<28} {med[name]:7.3f} s   aide --check / this: {aide / med[name]:6.1f}x"
                f"   cpu {mcpu[name]:6.3f} s ({mcpu['aide --check'] / mcpu[name]:5.1f}x)"
            )
        if cold_why is None:
            print("cold (drop_caches=3 before each):")
            for name in tools:
                ratio = cold["aide --check"] / cold[name]
                print(f"  {name:<28} {cold[name]:7.3f} s   aide / this: {ratio:6.1f}x")
        else:
            print(f"cold not measurable: {cold_why}")
            print("data-cold (file data evicted by fadvise DONTNEED; inodes, dentries cached):")
            for name in tools:
                ratio = data_cold["aide --check"] / data_cold[name]
                print(f"  {name:<28} {data_cold[name]:7.3f} s   aide / this: {ratio:6.1f}x")

        print(f"\nexit codes: {codes} (aide's bitmask: 1 added, 2 removed, 4 changed)")
        print(f"expected paths ({len(expected)}): {sorted(expected)}")
        ok = True
        for name, paths in found.items():
            same = paths == expected
            ok &= same
            extra = sorted(paths - expected)
            missed = sorted(expected - paths)
            verdict = "same set" if same else f"DIFFERENT: extra {extra}, missed {missed}"
            print(f"  {name:<28} {verdict}")
        full_x, inc_x = aide / med["verify --full"], aide / med["verify (incremental)"]
        print(
            f"\ntargets (warm, against aide --check): full {full_x:.1f}x (>= {TARGET_FULL:g}x), "
            f"incremental {inc_x:.1f}x (>= {TARGET_INCREMENTAL:g}x)"
        )
        ok &= full_x >= TARGET_FULL and inc_x >= TARGET_INCREMENTAL
        print("result:", "met" if ok else "MISSED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
