"""The launch command per runtime, from a Site built by hand (pure), and gather() on trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.containers.image_ref import image_problem
from dolmen.containers.oci import PODMAN_NPROC
from dolmen.containers.plan import Request, plan
from dolmen.containers.site import (
    UNLIMITED,
    Site,
    gather,
    parse_cap_sys_resource,
    parse_limits,
)
from dolmen.errors import UsageError
from dolmen.host.tree import TreeHost
from tests.conftest import make_tree

IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
ROOT_LIMITS = {"memlock": UNLIMITED, "stack": UNLIMITED, "nofile": 1048576, "nproc": UNLIMITED}
HERE_LIMITS = {"memlock": 8388608, "stack": UNLIMITED, "nofile": 20000, "nproc": 96363}
CDI = ("nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=all")


def _site(**kw: object) -> Site:
    base: dict[str, object] = {
        "installed": frozenset({"docker", "podman", "apptainer", "enroot", "pyxis"}),
        "hard_limits": ROOT_LIMITS,
        "can_raise_limits": True,
    }
    base.update(kw)
    return Site(**base)  # type: ignore[arg-type]


def _pairs(argv: tuple[str, ...], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def test_docker_ngc_line() -> None:
    p = plan(Request(IMAGE, ("python", "train.py"), "docker"), _site())
    assert p.argv[:5] == ("docker", "run", "--rm", "--gpus", "all")
    assert "--ipc=host" in p.argv
    assert _pairs(p.argv, "--ulimit") == ["memlock=-1", "stack=67108864"]
    assert p.argv[-3:] == (IMAGE, "python", "train.py") and not p.problems
    assert p.gpu_mode == "gpus-flag"


def test_docker_cdi_when_enabled_and_specs_exist() -> None:
    site = _site(docker_cdi=True, cdi_devices=CDI, cdi_specs=("/etc/cdi/nvidia.yaml",))
    p = plan(Request(IMAGE, runtime="docker", gpus="0,1"), site)
    assert _pairs(p.argv, "--device") == ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]
    assert p.gpu_mode == "cdi"
    p = plan(Request(IMAGE, runtime="docker", gpus="0,1"), _site(cdi_devices=CDI))
    assert _pairs(p.argv, "--gpus") == ['"device=0,1"']


def test_podman_needs_a_cdi_spec() -> None:
    p = plan(Request(IMAGE, runtime="podman"), _site())
    assert p.problems and "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in p.problems[0]
    p = plan(Request(IMAGE, runtime="podman", gpus="3"), _site(cdi_devices=CDI))
    assert any("nvidia.com/gpu=3 is not in the CDI specs" in x for x in p.problems)
    p = plan(Request(IMAGE, runtime="podman", gpus="none"), _site())
    assert not p.problems and "--device" not in p.argv


def test_podman_limits_adapt_to_this_session() -> None:
    """No CAP_SYS_RESOURCE: memlock is capped at the hard limit (and said), nofile and nproc
    always come with it (any --ulimit replaces podman's defaults)."""
    site = _site(cdi_devices=CDI, hard_limits=HERE_LIMITS, can_raise_limits=False)
    p = plan(Request(IMAGE, runtime="podman"), site)
    assert _pairs(p.argv, "--ulimit") == [
        "memlock=8388608:8388608",
        "stack=67108864:67108864",
        "nofile=20000:20000",
        f"nproc={PODMAN_NPROC}:{PODMAN_NPROC}",
    ]
    assert any("memlock capped" in n for n in p.notes)
    p = plan(Request(IMAGE, runtime="podman"), _site(cdi_devices=CDI))
    assert _pairs(p.argv, "--ulimit")[0] == "memlock=-1:-1"
    assert not any("capped" in n for n in p.notes)


def test_shm_size_replaces_ipc_host() -> None:
    p = plan(Request(IMAGE, runtime="podman", shm_size="16g"), _site(cdi_devices=CDI))
    assert "--ipc=host" not in p.argv and _pairs(p.argv, "--shm-size") == ["16g"]


def test_rdma_nccl_conf_and_checkpoint() -> None:
    site = _site(
        rdma_devices=("/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm", "/dev/gdrdrv"),
        nccl_conf=True,
    )
    p = plan(Request(IMAGE, runtime="docker", checkpoint="/ckpt/run1", env=("A=1",)), site)
    assert _pairs(p.argv, "--device") == list(site.rdma_devices)
    assert _pairs(p.argv, "--cap-add") == ["IPC_LOCK"]
    assert _pairs(p.argv, "-v") == [
        "/etc/nccl.conf:/etc/nccl.conf:ro",
        "/ckpt/run1:/checkpoints:rw",
    ]
    assert _pairs(p.argv, "-e") == ["DOLMEN_CHECKPOINT_DIR=/checkpoints", "A=1"]


def test_apptainer() -> None:
    p = plan(Request(IMAGE, ("python",), "apptainer", gpus="1"), _site(nccl_conf=True))
    assert p.argv[:3] == ("apptainer", "exec", "--nv")
    assert f"docker://{IMAGE}" in p.argv and "CUDA_VISIBLE_DEVICES=1" in p.argv
    assert _pairs(p.argv, "--bind") == ["/etc/nccl.conf:/etc/nccl.conf:ro"]
    p = plan(
        Request("/images/pt.sif", runtime="singularity"),
        _site(installed=frozenset({"singularity"})),
    )
    assert p.argv[:3] == ("singularity", "run", "--nv") and p.argv[-1] == "/images/pt.sif"


def test_enroot_and_pyxis() -> None:
    p = plan(Request(IMAGE, ("python",), "enroot"), _site())
    assert (
        p.problems and "enroot import 'docker://nvcr.io#nvidia/pytorch:24.05-py3'" in p.problems[0]
    )
    p = plan(Request("pytorch", ("python",), "enroot"), _site())
    assert not p.problems and "NVIDIA_VISIBLE_DEVICES=all" in p.argv
    p = plan(Request(IMAGE, ("python", "t.py"), checkpoint="/ckpt"), _site(in_slurm=True))
    assert p.runtime == "pyxis"
    assert p.argv == (
        "srun",
        "--container-image=nvcr.io#nvidia/pytorch:24.05-py3",
        "--container-mounts=/ckpt:/checkpoints:rw",
        "--export=ALL,DOLMEN_CHECKPOINT_DIR=/checkpoints",
        "python",
        "t.py",
    )


def test_runtime_choice() -> None:
    assert plan(Request(IMAGE), _site()).runtime == "docker"
    assert plan(Request(IMAGE), _site(installed=frozenset({"podman"}))).runtime == "podman"
    with pytest.raises(UsageError, match="no container runtime"):
        plan(Request(IMAGE), _site(installed=frozenset()))
    p = plan(Request(IMAGE, runtime="docker"), _site(installed=frozenset({"podman"})))
    assert p.problems == ("docker is not on this host's PATH",)


@pytest.mark.parametrize(
    "req",
    [
        Request(""),
        Request("--privileged"),
        Request(IMAGE, runtime="lxc"),
        Request(IMAGE, gpus="0;rm -rf /"),
        Request(IMAGE, mounts=("relative:/x",)),
        Request(IMAGE, mounts=("/a:/b:rx",)),
        Request(IMAGE, env=("1BAD=x",)),
        Request(IMAGE, env=("NOEQUALS",)),
        Request(IMAGE, checkpoint="ckpt"),
        Request(IMAGE, shm_size="lots"),
    ],
)
def test_bad_requests(req: Request) -> None:
    with pytest.raises(UsageError):
        plan(req, _site())


@pytest.mark.parametrize(
    ("image", "ok"),
    [
        ("nvcr.io/nvidia/pytorch:24.05-py3", True),
        ("ubuntu", True),
        ("localhost/dolmen-setup-torch:test", True),
        ("localhost:5000/a/b:v1", True),
        ("registry.example.com:443/team/x_y__z-w.v:Tag_1.0", True),
        ("docker.io/library/ubuntu@sha256:" + "0" * 64, True),
        ("ubuntu:22.04@sha256:" + "a" * 64, True),
        ("docker://nvcr.io/nvidia/pytorch:24.05-py3", True),
        ("/srv/images/pytorch.sqsh", True),
        ("pytorch.sif", True),
        ("oci-archive:/srv/x.tar", True),
        ("a b", False),
        ("UPPER/Case:tag", False),
        ("Upper/x", False),  # no registry: a name component, lowercase
        ("ghcr.io/Team/x", False),
        ("x;rm -rf /", False),
        ("x:", False),
        ("x:-tag", False),
        ("x:" + "t" * 129, False),
        ("x@sha256:abc", False),
        ("x@md5:" + "0" * 32, False),
        ("a..b", False),
        ("-x", False),
        ("", False),
        ("docker://", False),
        ("docker://Bad", False),
        ("oras://", False),
        ("/srv/x\n.sif", False),
        ("a" * 256, False),
    ],
)
def test_image_references(image: str, ok: bool) -> None:
    """The OCI distribution grammar (containers.image_ref), or an image file / transport."""
    why = image_problem(image)
    assert (why is None) is ok
    if not ok:
        assert why is not None and why.startswith(repr(image)) and "\n" not in why
        with pytest.raises(UsageError):
            plan(Request(image), _site())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (Path("/proc/self/limits").read_text() if Path("/proc/self/limits").exists() else "", None),
        (
            "Limit                     Soft Limit           Hard Limit           Units\n"
            "Max stack size            8388608              unlimited            bytes\n"
            "Max processes             96363                96363                processes\n"
            "Max open files            20000                20000                files\n"
            "Max locked memory         8388608              8388608              bytes\n",
            {"stack": UNLIMITED, "nproc": 96363, "nofile": 20000, "memlock": 8388608},
        ),
        ("", {}),
        ("Max locked memory  junk junk bytes\n", {}),
        ("\x00\xff", {}),
    ],
)
def test_parse_limits(text: str, expected: dict[str, int] | None) -> None:
    got = parse_limits(text)
    if expected is None:  # this machine's own file: the four limits are there
        assert set(got) == {"memlock", "stack", "nofile", "nproc"} or not text
    else:
        assert got == expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("CapEff:\t000001ffffffffff\n", True),
        ("CapEff:\t000001fffeffffff\n", False),  # bit 24 cleared
        ("CapEff:\t0000000000000000\n", False),
        ("CapEff:\tzz\n", None),
        ("Name: x\n", None),
    ],
)
def test_cap_sys_resource(status: str, expected: bool | None) -> None:
    assert parse_cap_sys_resource(status) is expected


def test_gather_tree(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        files={
            "usr/bin/podman": "",
            "usr/bin/enroot": "",
            "etc/slurm/plugstack.conf": "required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n",
            "etc/cdi/nvidia.yaml": "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n- name: all\n",
            "etc/cdi/other.yaml": "cdiVersion: 0.5.0\nkind: example.com/x\ndevices:\n- name: a\n",
            "var/run/cdi/broken.yaml": "kind: [\n",
            "dev/infiniband/uverbs0": "",
            "dev/infiniband/rdma_cm": "",
            "dev/gdrdrv": "",
            "etc/nccl.conf": "NCCL_DEBUG=WARN\n",
            "etc/docker/daemon.json": '{"features": {"cdi": true}}',
            "proc/self/limits": "Max locked memory 65536 65536 bytes\n",
        },
    )
    site = gather(TreeHost(root))
    assert site.installed == {"podman", "enroot", "pyxis"}
    assert site.cdi_devices == ("nvidia.com/gpu=0", "nvidia.com/gpu=all")
    assert site.cdi_specs == ("/etc/cdi/nvidia.yaml",)
    assert site.rdma_devices == (
        "/dev/infiniband/rdma_cm",
        "/dev/infiniband/uverbs0",
        "/dev/gdrdrv",
    )
    assert site.nccl_conf and site.docker_cdi is True
    assert site.hard_limits == {"memlock": 65536} and site.can_raise_limits is None


def test_gather_empty_tree(tmp_path: Path) -> None:
    site = gather(TreeHost(make_tree(tmp_path)))
    assert site.installed == frozenset() and not site.cdi_devices and not site.nccl_conf
