"""``containers run`` carries the caller's compile caches (tune's ``[caches]``) into the
container: pure plans from a Site built by hand, gather() on a tree, and a real podman run
that writes a kernel into the mounted cache and finds it on the host."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dolmen.cli.main import main
from dolmen.containers.plan import CACHE_MOUNT, Request, plan, with_caches
from dolmen.containers.site import Site, gather
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree
from tests.containers.test_podman_real import IMAGE, podman_env  # noqa: F401 - the fixture

TUNE = (
    ("CUDA_CACHE_PATH", "/raid/dolmen-cache/1000/cuda"),
    ("TRITON_CACHE_DIR", "/raid/dolmen-cache/1000/triton"),
    ("TORCHINDUCTOR_CACHE_DIR", "/raid/dolmen-cache/1000/inductor"),
    ("CUDA_CACHE_MAXSIZE", "4294967296"),
    ("TORCHINDUCTOR_FX_GRAPH_CACHE", "1"),
)
SITE = Site(installed=frozenset({"docker", "podman", "apptainer", "enroot"}), caches=TUNE)


def test_tunes_layout_is_one_mount_and_the_variables_point_into_it() -> None:
    got = plan(Request("nvcr.io/nvidia/pytorch:25.01-py3", ("python",), runtime="docker"), SITE)
    argv = list(got.argv)
    assert argv.count("-v") == 1
    assert argv[argv.index("-v") + 1] == f"/raid/dolmen-cache/1000:{CACHE_MOUNT}:rw"
    env = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert env == [
        "CUDA_CACHE_PATH=/dolmen-cache/cuda",
        "TRITON_CACHE_DIR=/dolmen-cache/triton",
        "TORCHINDUCTOR_CACHE_DIR=/dolmen-cache/inductor",
        "CUDA_CACHE_MAXSIZE=4294967296",
        "TORCHINDUCTOR_FX_GRAPH_CACHE=1",
    ]
    assert any(n.startswith("compile caches mounted at /dolmen-cache") for n in got.notes)


def test_folders_set_by_hand_are_mounted_one_by_one_and_the_user_wins() -> None:
    site = Site(
        installed=frozenset({"podman"}),
        caches=(("CUDA_CACHE_PATH", "/home/u/.nv/ComputeCache"), ("TRITON_CACHE_DIR", "/x/t")),
    )
    req = Request("img", runtime="podman", env=("TRITON_CACHE_DIR=/mine",))
    new, notes = with_caches(req, site)
    assert new.mounts == (f"/home/u/.nv/ComputeCache:{CACHE_MOUNT}/cuda:rw",)
    assert new.env == ("TRITON_CACHE_DIR=/mine", "CUDA_CACHE_PATH=/dolmen-cache/cuda")
    assert notes == ("compile caches mounted at /dolmen-cache: CUDA_CACHE_PATH",)
    # a mount of the user's own at /dolmen-cache: nothing added
    mine = Request("img", runtime="podman", mounts=("/data/c:/dolmen-cache",))
    assert with_caches(mine, site) == (mine, ())
    assert with_caches(Request("img"), Site(installed=frozenset())) == (Request("img"), ())


def test_gather_takes_the_callers_variables_that_name_folders(tmp_path: Path) -> None:
    env = {
        "CUDA_CACHE_PATH": "/raid/dolmen-cache/1000/cuda",  # not made yet: its parent is
        "TRITON_CACHE_DIR": "/raid/dolmen-cache/1000/elsewhere",  # absent, unusual name
        "TORCHINDUCTOR_CACHE_DIR": "relative/inductor",
        "DOLMEN_TENSORRT_CACHE_DIR": "/raid/a:b",  # a colon: no bind mount can name it
        "CUDA_CACHE_MAXSIZE": "1073741824",
    }
    root = make_tree(tmp_path, files={"raid/dolmen-cache/1000/.keep": ""})
    (root / "dolmen-snapshot.json").write_text(json.dumps({"environment": env}))
    site = gather(TreeHost(root))
    assert site.caches == (
        ("CUDA_CACHE_PATH", "/raid/dolmen-cache/1000/cuda"),
        ("CUDA_CACHE_MAXSIZE", "1073741824"),
    )
    assert gather(TreeHost(make_tree(tmp_path / "empty"))).caches == ()


def test_real_podman_run_writes_into_the_hosts_cache(
    podman_env: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    user = tmp_path / "cache" / str(os.getuid())
    (user / "inductor").mkdir(parents=True)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(user / "inductor"))
    monkeypatch.setenv("CUDA_CACHE_PATH", str(user / "cuda"))  # made at first use
    monkeypatch.setenv("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
    script = "echo ind=$TORCHINDUCTOR_CACHE_DIR fx=$TORCHINDUCTOR_FX_GRAPH_CACHE; "
    script += "echo compiled > $TORCHINDUCTOR_CACHE_DIR/kernel"
    argv = ["containers", "run", "--runtime", "podman", "--network", "none", "--gpus", "none"]
    rc = main([*argv, IMAGE, "--", "sh", "-c", script])
    out, err = capfd.readouterr()
    assert rc == 0, err
    assert "ind=/dolmen-cache/inductor fx=1" in out
    assert (user / "inductor" / "kernel").read_text() == "compiled\n"
