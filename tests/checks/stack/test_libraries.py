"""stack.libraries.broken_links and stack.libraries.consistent on host trees.

Real input: the linker cache of a driver 515.105.01 host (``LDCONFIG``). Synthetic
(no recording holds them): cuDNN/NCCL/TensorRT headers with their real #define
names, linker-cache lines for those libraries in ldconfig's format, library files
and links, toolkit version.json files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dolmen.checks.model import Status
from dolmen.kb import load_kb
from dolmen.kb.builds import Builds, parse_version
from tests.checks.stack.hosts import LDCONFIG, by_subject, link, run
from tests.conftest import make_tree, recording

CUDNN, NCCL, TENSORRT = (load_kb().builds.get(k) for k in ("cudnn", "nccl", "tensorrt"))
BROKEN = "stack.libraries.broken_links"
CONSISTENT = "stack.libraries.consistent"
USR_LIB = "usr/lib/x86_64-linux-gnu"


def _cache(*names: str) -> str:
    """ldconfig -p listing ``names`` in usr/lib/x86_64-linux-gnu."""
    lines = [f"{len(names)} libs found in cache `/etc/ld.so.cache'"]
    lines += [f"\t{n} (libc6,x86-64) => /{USR_LIB}/{n}" for n in names]
    return "\n".join(lines) + "\n"


def _header(prefix: str, version: str, suffix: str = "PATCH") -> str:
    major, minor, patch = version.split(".")
    return (
        f"#define {prefix}_MAJOR {major}\n#define {prefix}_MINOR {minor}\n"
        f"#define {prefix}_{suffix} {patch}\n"
    )


def _toolkits(*versions: str) -> dict[str, str]:
    return {
        f"usr/local/cuda-{v[:4]}/version.json": json.dumps({"cuda": {"version": v}})
        for v in versions
    }


def _libs(root: Path, **versions: str) -> None:
    """libcudnn.so.9 -> libcudnn.so.9.13.0 style links for stem=version pairs."""
    for stem, version in versions.items():
        major = version.split(".")[0]
        make_tree(root, files={f"{USR_LIB}/{stem}.so.{version}": ""})
        link(root, f"{USR_LIB}/{stem}.so.{major}", f"{stem}.so.{version}")


# --- stack.libraries.broken_links -----------------------------------------------------------


def test_broken_links_fail(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"ldconfig -p": recording(LDCONFIG).read_text()})
    link(root, f"{USR_LIB}/libcudnn.so.8", "libcudnn.so.8.9.7")  # target removed by an upgrade
    link(root, f"{USR_LIB}/libnvidia-ml.so.1", f"/{USR_LIB}/libnvidia-ml.so.515.105.01")
    link(root, f"{USR_LIB}/libssl.so.3", "gone")  # not the stack's: not reported
    found = by_subject(run(root, BROKEN))
    assert set(found) == {
        f"lib:/{USR_LIB}/libcudnn.so.8",
        f"lib:/{USR_LIB}/libnvidia-ml.so.1",
    }
    f = found[f"lib:/{USR_LIB}/libcudnn.so.8"]
    assert f.status is Status.FAIL and f.evidence["target"] == "libcudnn.so.8.9.7"
    assert f.remedy is not None and "dpkg -S" in f.remedy


def test_broken_links_pass_on_the_recorded_cache(tmp_path: Path) -> None:
    root = make_tree(tmp_path, commands={"ldconfig -p": recording(LDCONFIG).read_text()})
    link(root, f"{USR_LIB}/libcuda.so.1", "libcuda.so.515.105.01")
    make_tree(root, files={f"{USR_LIB}/libcuda.so.515.105.01": ""})
    [f] = run(root, BROKEN)
    assert f.status is Status.PASS and f.subject == "host" and "linker cache" in f.summary


def test_broken_links_skip_and_unknown(tmp_path: Path) -> None:
    plain = _cache("libz.so.1")
    [f] = run(make_tree(tmp_path / "a", commands={"ldconfig -p": plain}), BROKEN)
    # ldconfig -p alone: no library folder in the bundle, so no link could be checked.
    assert f.status is Status.SKIP and f.summary == "not in this bundle: usr/lib"
    nvidia = _cache("libcuda.so.1")
    [f] = run(make_tree(tmp_path / "n", commands={"ldconfig -p": nvidia}), BROKEN)
    assert f.status is Status.SKIP and f.summary == "not in this bundle: usr/lib"
    (tmp_path / "u/usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    [f] = run(make_tree(tmp_path / "u", commands={"ldconfig -p": plain}), BROKEN)
    assert f.status is Status.SKIP and "nothing to check" in f.summary
    failing = {"ldconfig -p": ("", 1, "ldconfig: Can't open cache file /etc/ld.so.cache\n")}
    (tmp_path / "b/usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    [f] = run(make_tree(tmp_path / "b", commands=failing), BROKEN)
    assert f.status is Status.UNKNOWN and "command failed" in f.summary


# --- stack.libraries.consistent -------------------------------------------------------------


def test_consistent_pass_libraries_for_cuda_13(tmp_path: Path) -> None:
    """The healthy H100 node's pairing: cuDNN 9.13.0 and NCCL 2.27.7 with CUDA 13.0.2."""
    root = make_tree(
        tmp_path,
        files=_toolkits("13.0.2"),
        commands={"ldconfig -p": _cache("libcudnn.so.9", "libnccl.so.2")},
    )
    _libs(root, libcudnn="9.13.0", libnccl="2.27.7")
    found = by_subject(run(root, CONSISTENT))
    assert found["lib:cudnn"].status is Status.PASS
    assert found["lib:cudnn"].summary == "cuDNN 9.13.0, built for CUDA 13"
    assert found["lib:nccl"].status is Status.PASS and found["lib:nccl"].evidence[
        "cuda_majors"
    ] == [13]


@pytest.mark.parametrize(
    ("files", "toolkit", "subject", "words"),
    [
        (
            {"usr/include/cudnn_version.h": _header("CUDNN", "8.9.7", "PATCHLEVEL")},
            "13.0.2",
            "lib:cudnn",
            "cuDNN 8.9.7 has no build for the installed CUDA (CUDA 13: 9.12 or later)",
        ),
        (
            {"usr/include/nccl.h": _header("NCCL", "2.18.5")},
            "13.0.2",
            "lib:nccl",
            "NCCL 2.18.5 has no build for the installed CUDA (CUDA 13: 2.27.7 or later)",
        ),
        (
            {"usr/include/x86_64-linux-gnu/NvInferVersion.h": _header("NV_TENSORRT", "10.13.2")},
            "11.8.0",
            "lib:tensorrt",
            "TensorRT 10.13.2 has no build for the installed CUDA (CUDA 11: 7.2 to 10.13.1)",
        ),
    ],
)
def test_consistent_warn_no_build_for_cuda(
    tmp_path: Path, files: dict[str, str], toolkit: str, subject: str, words: str
) -> None:
    root = make_tree(tmp_path, files={**files, **_toolkits(toolkit)})
    [f] = run(root, CONSISTENT)
    assert f.subject == subject and f.status is Status.WARN and words in f.summary
    assert f.remedy is not None and "cuda13" in f.remedy


def test_consistent_warn_header_disagrees_with_library(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "usr/include/cudnn_version.h": _header("CUDNN", "9.1.0", "PATCHLEVEL"),
            **_toolkits("12.4.1"),
        },
        commands={"ldconfig -p": _cache("libcudnn.so.9")},
    )
    _libs(root, libcudnn="9.13.0")
    [f] = run(root, CONSISTENT)
    assert f.status is Status.WARN
    assert "/usr/include/cudnn_version.h says 9.1.0" in f.summary and "is 9.13.0" in f.summary
    assert f.evidence["libraries"] == {f"/{USR_LIB}/libcudnn.so.9": "9.13.0"}


def test_consistent_library_inside_a_toolkit_pairs_with_it(tmp_path: Path) -> None:
    """A cuDNN tarball copied into cuda-12.4 pairs with 12.4, not with the 13.0 next to it."""
    header = _header("CUDNN", "9.1.0", "PATCHLEVEL")
    root = make_tree(
        tmp_path,
        files={"usr/local/cuda-12.4/include/cudnn_version.h": header, **_toolkits("12.4.1")},
    )
    make_tree(root, files=_toolkits("13.0.2"))
    [f] = run(root, CONSISTENT)
    assert f.status is Status.PASS and f.evidence["cuda_majors"] == [12]


def test_consistent_unknown_when_version_too_coarse(tmp_path: Path) -> None:
    """Only libcudnn.so.9 (no minor): whether it is 9.12+ (CUDA 13 builds) cannot be told."""
    root = make_tree(
        tmp_path,
        files={f"{USR_LIB}/libcudnn.so.9": "", **_toolkits("13.0.2")},
        commands={"ldconfig -p": _cache("libcudnn.so.9")},
    )
    [f] = run(root, CONSISTENT)
    assert f.status is Status.UNKNOWN and "cuDNN 9" in f.summary


def test_consistent_without_toolkit_and_without_libraries(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "a", commands={"ldconfig -p": _cache("libnccl.so.2")})
    _libs(root, libnccl="2.21.5")
    [f] = run(root, CONSISTENT)
    assert f.status is Status.PASS and "no CUDA toolkit installed" in f.summary
    [f] = run(make_tree(tmp_path / "b", commands={"ldconfig -p": _cache("libz.so.1")}), CONSISTENT)
    assert f.status is Status.SKIP
    [f] = run(make_tree(tmp_path / "c", commands={"ldconfig -p": ("", 1, "boom\n")}), CONSISTENT)
    assert f.status is Status.UNKNOWN


@pytest.mark.parametrize(
    ("table", "version", "major", "has"),
    [
        (CUDNN, "9.12.0", 13, True),
        (CUDNN, "9.11.1", 13, False),
        (CUDNN, "9.10.2", 11, True),
        (CUDNN, "9.17.0", 11, False),
        (CUDNN, "8.9.7", 12, True),
        (CUDNN, "9", 13, None),
        (CUDNN, "9", 12, True),  # every cuDNN 9 has CUDA 12 builds
        (CUDNN, "9.13.0", 10, None),  # a major the table does not know
        (NCCL, "2.27.7", 13, True),
        (NCCL, "2.27.6", 13, False),
        (NCCL, "2.27", 13, None),
        (TENSORRT, "10.13.1", 11, True),
        (TENSORRT, "10.13.2", 11, False),
    ],
)
def test_build_tables(table: Builds, version: str, major: int, has: bool | None) -> None:
    v = parse_version(version)
    assert v is not None and table.has_build(v, major) is has


def test_parse_version_rejects_junk() -> None:
    assert parse_version("9.x") is None and parse_version("") is None
