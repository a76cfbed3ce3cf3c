"""stack.env.paths on host trees whose dolmen-snapshot.json records the session's environment
(synthetic: the variables an admin's profile sets; the folders exist or not in the tree)."""

from __future__ import annotations

from pathlib import Path

from dolmen.checks.model import Status
from tests.checks.stack.hosts import by_subject, environment, run
from tests.conftest import make_tree

ENV = "stack.env.paths"
TOOLKIT = {"usr/local/cuda-12.4/bin/nvcc": "", "usr/local/cuda-12.4/lib64/libcudart.so.12": ""}


def test_env_pass(tmp_path: Path) -> None:
    env = {
        "CUDA_HOME": "/usr/local/cuda-12.4",
        "PATH": "/usr/local/cuda-12.4/bin:/usr/bin:/home/me/.local/bin",
        "LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64",
    }
    root = make_tree(tmp_path, files={**TOOLKIT, "usr/bin/env": "", **environment(env)})
    found = by_subject(run(root, ENV))
    assert {s: f.status for s, f in found.items()} == {
        "env:CUDA_HOME": Status.PASS,
        "env:LD_LIBRARY_PATH": Status.PASS,
        "env:PATH": Status.PASS,  # ~/.local/bin is missing, and harmless
    }


def test_env_fail_stub_libcuda_on_ld_library_path(tmp_path: Path) -> None:
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64/stubs:/usr/local/cuda-12.4/lib64"}
    stub = {"usr/local/cuda-12.4/lib64/stubs/libcuda.so": ""}
    root = make_tree(tmp_path, files={**TOOLKIT, **stub, **environment(env)})
    [f] = run(root, ENV)
    assert f.status is Status.FAIL and f.subject == "env:LD_LIBRARY_PATH"
    assert f.evidence["stubs"] == ["/usr/local/cuda-12.4/lib64/stubs"]
    assert "stub library" in f.summary and f.remedy is not None and "stubs" in f.remedy


def test_env_warn_missing_folders(tmp_path: Path) -> None:
    env = {
        "CUDA_HOME": "/usr/local/cuda-11.8",  # removed by an upgrade
        "CUDA_PATH": "/usr/local/cuda-12.4",
        "PATH": "/usr/local/cuda-11.8/bin:/usr/bin",
        "LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64:lib",
    }
    root = make_tree(tmp_path, files={**TOOLKIT, "usr/bin/env": "", **environment(env)})
    found = by_subject(run(root, ENV))
    assert found["env:CUDA_HOME"].status is Status.WARN
    assert "does not exist" in found["env:CUDA_HOME"].summary
    assert found["env:CUDA_PATH"].status is Status.PASS
    assert found["env:PATH"].status is Status.WARN
    assert found["env:PATH"].evidence["entries"] == ["/usr/local/cuda-11.8/bin"]
    ld = found["env:LD_LIBRARY_PATH"]
    assert ld.status is Status.WARN and ld.evidence["entries"] == [
        "/usr/local/cuda-11.8/lib64",
        "lib",
    ]


def test_env_skip_when_nothing_recorded(tmp_path: Path) -> None:
    [f] = run(make_tree(tmp_path, files=TOOLKIT), ENV)
    assert f.status is Status.SKIP and f.subject == "host"
