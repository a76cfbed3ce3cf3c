"""A base image for the Containerfile, built here without a registry: the machine's own
Debian Python (/usr/bin/python3.11, its standard library and the shared libraries ldd names),
a static busybox for /bin/sh, and dolmen's dependencies copied from the test virtualenv
(pure Python, or compiled for the same CPython 3.11 ABI), pip among them. Imported with
``podman import``, it stands in for ``python:3.11-slim``: the Containerfile's build step
then runs unchanged, offline (PIP_FLAGS="--no-index --no-deps").

Not a general image builder: exactly what the agent image needs, named here."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path

PYTHON = Path("/usr/bin/python3.11")
STDLIB = Path("/usr/lib/python3.11")
BUSYBOX = Path("/bin/busybox")
# dolmen's runtime dependencies (pyproject) with theirs, the serve extras, and pip itself
DEPENDENCIES = (
    "click", "rich", "markdown_it", "mdurl", "pygments", "pynvml.py", "cryptography",
    "cffi", "pycparser", "pip",
)  # fmt: skip
# dolmen serve's (starlette, uvicorn and theirs): copied where the virtualenv has them
SERVE = ("starlette", "uvicorn", "anyio", "sniffio", "h11", "idna", "typing_extensions.py")
APPLETS = (
    "sh", "cat", "ls", "env", "sleep", "rm", "mkdir", "tail", "head", "tr", "sed", "grep",
    "timeout", "printf", "echo", "true", "false", "id", "uname", "cp", "ln", "chmod", "mv",
    "mktemp", "dirname", "basename", "readlink", "find", "test", "[", "wc", "sort", "cut",
)  # fmt: skip
SKIP_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "lib2to3", "__pycache__"}


def missing() -> str | None:
    """Why the base cannot be built here, or None."""
    for need in (PYTHON, STDLIB, BUSYBOX):
        if not need.exists():
            return f"{need} is absent (Debian: python3.11, busybox-static)"
    if shutil.which("ldd") is None:
        return "ldd is absent (Debian: libc-bin)"
    return None


def _libraries(binaries: list[Path]) -> set[Path]:
    """Every shared library (and the loader) the binaries load, as ldd resolves them."""
    out: set[Path] = set()
    for chunk in range(0, len(binaries), 50):
        done = subprocess.run(
            ["ldd", *map(str, binaries[chunk : chunk + 50])], capture_output=True, text=True
        )
        for line in done.stdout.splitlines():
            m = re.search(r"(?:=> )?(/\S+) \(0x", line)
            if m:
                out.add(Path(m.group(1)))
    return out


def build_rootfs(root: Path, extra: tuple[str, ...] = ()) -> Path:
    """The base's root folder (see the module docstring); ``extra`` names more packages of
    the virtualenv to copy (tests/setup's benchmark image adds torch), without their
    headers and tests."""
    site = Path(sysconfig.get_paths()["purelib"]) if sys.prefix != sys.base_prefix else None
    if site is None:
        raise RuntimeError("run the tests from a virtualenv: its site-packages are copied")
    for d in ("bin", "usr/bin", "tmp", "etc", "var/lib", "run", "proc", "sys", "dev"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "tmp").chmod(0o1777)
    shutil.copy2(BUSYBOX, root / "bin/busybox")
    for applet in APPLETS:
        (root / "bin" / applet).symlink_to("busybox")
    shutil.copy2(PYTHON, root / "usr/bin/python3.11")
    (root / "usr/bin/python3").symlink_to("python3.11")
    shutil.copytree(
        STDLIB,
        root / STDLIB.relative_to("/"),
        symlinks=True,
        ignore=lambda _d, names: [n for n in names if n in SKIP_STDLIB or n.endswith(".pyc")],
    )
    dist = root / "usr/lib/python3/dist-packages"
    dist.mkdir(parents=True)
    for name in (*DEPENDENCIES, *SERVE, *extra):
        src = site / name
        if name in SERVE and not src.exists():
            continue
        if src.is_dir():
            shutil.copytree(src, dist / name, ignore=_ignore(name in extra))
        else:
            shutil.copy2(src, dist / name)
    for so in site.glob("_cffi_backend*.so"):
        shutil.copy2(so, dist / so.name)
    binaries = [PYTHON, *root.rglob("*.so")]
    for lib in _libraries(binaries):
        if lib.is_relative_to(root):  # a package's own library ($ORIGIN): copied with it
            continue
        dst = root / lib.relative_to("/")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not dst.exists():
            shutil.copy2(lib.resolve(), dst)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (root / "etc/group").write_text("root:x:0:\n")
    # its own name: a test that sees the host's os-release knows the mount worked
    (root / "etc/os-release").write_text('ID=dolmen-test-base\nPRETTY_NAME="dolmen test base"\n')
    return root


def _ignore(trim: bool) -> Callable[[str, list[str]], Iterable[str]]:
    """What copytree leaves out: caches; for ``extra`` packages also C headers and tests
    (torch: 150 MB that no import reads; its bin/ holds torch_shm_manager, which it needs)."""
    names = {"__pycache__", *(("include", "test", "tests") if trim else ())}
    return lambda _d, found: [n for n in found if n in names]


def rootfs_tar(root: Path, tar: Path) -> Path:
    with tarfile.open(tar, "w") as t:
        for entry in sorted(root.iterdir()):
            t.add(entry, arcname=entry.name)
    return tar
