"""``dolmen containers run`` starting real containers with Debian's podman.

No registry: the image is a static busybox imported with ``podman import``; podman's
configuration and storage are private (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF; the
runc runtime, the vfs driver: no overlay mounts left behind), ``--network none``. The
GPU is a CDI device declared in a private spec: podman 4.3 reads only /etc/cdi and
/var/run/cdi, so the spec is written there under a unique name, behind a lock, and
removed after. This machine cannot raise memlock (root lacks CAP_SYS_RESOURCE, hard
limit 8 MiB): the run caps it at the hard limit and says so, and the container sees it.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dolmen.audit.reader import read_entries
from dolmen.cli.main import main
from tests.podman import Podman, cdi_folder, private_config

BUSYBOX = Path("/bin/busybox")
IMAGE = "localhost/dolmen-containers-test:1"

pytestmark = [
    pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed"),
    pytest.mark.skipif(shutil.which("runc") is None, reason="runc is not installed"),
    pytest.mark.skipif(not BUSYBOX.exists(), reason="busybox-static is not installed"),
]

SPEC = """cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
  - name: all
    containerEdits:
      env:
        - FAKE_GPU_VISIBLE=all
      deviceNodes:
        - path: /dev/fakegpu0
          hostPath: /dev/null
      mounts:
        - hostPath: {work}/fakefile
          containerPath: /fake/gpu-info
          options: ["ro", "bind"]
"""


def _rootfs(path: Path) -> None:
    """A tar of a static busybox with the applets the test uses."""
    with tarfile.open(path, "w") as tar:
        tar.add(BUSYBOX, arcname="bin/busybox")
        for applet in ("sh", "cat", "ls", "echo", "touch"):
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        for folder in ("dev", "proc", "sys", "tmp", "checkpoints", "fake"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info, io.BytesIO())


@pytest.fixture
def podman_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:

    work = tmp_path / "podman"
    work.mkdir()
    for key, value in private_config(work).items():
        monkeypatch.setenv(key, value)
    _rootfs(work / "rootfs.tar")
    podman = Podman(work)  # the import writes podman's blob-info cache: in its own namespace
    done = podman("import", str(work / "rootfs.tar"), IMAGE, timeout=120)
    if done.returncode != 0:
        pytest.skip(f"podman import failed here: exit {done.returncode} {done.stderr[-200:]}")
    (work / "fakefile").write_text("fake gpu 0\n")
    with cdi_folder() as cdi:  # one private spec at a time
        cdi.mkdir(parents=True, exist_ok=True)
        spec = cdi / f"dolmen-test-{uuid.uuid4().hex}.yaml"
        spec.write_text(SPEC.format(work=work))
        try:
            yield work
        finally:
            spec.unlink(missing_ok=True)
            podman("rmi", "-f", IMAGE, timeout=60)


def _events(state: Path) -> list[tuple[str, str, object]]:
    log = state / "audit" / "audit.log"
    out = []
    for e in read_entries(log):
        ev = e.event
        if ev is not None and ev.action == "containers.run" and ev.target.endswith(IMAGE):
            out.append((ev.outcome, str(ev.details.get("phase")), ev.details.get("exit_status")))
    return out


def test_real_run_gpu_device_checkpoint_and_limits(
    podman_env: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ckpt = podman_env / "ckpt"
    ckpt.mkdir()
    script = (
        "cat /fake/gpu-info; echo visible=$FAKE_GPU_VISIBLE; ls /dev/fakegpu0; "
        "echo memlock=$(ulimit -l); echo ckpt=$DOLMEN_CHECKPOINT_DIR; touch /checkpoints/ok"
    )
    argv = ["containers", "run", "--runtime", "podman", "--network", "none"]
    argv += ["--checkpoint", str(ckpt), IMAGE, "--", "sh", "-c", script]
    state = Path(os.environ["DOLMEN_STATE_DIR"])
    before = len(_events(state)) if (state / "audit" / "audit.log").exists() else 0
    rc = main(argv)
    out, err = capfd.readouterr()
    assert rc == 0, err
    assert "fake gpu 0" in out and "visible=all" in out and "/dev/fakegpu0" in out
    assert "ckpt=/checkpoints" in out and (ckpt / "ok").exists()
    hard = _hard_memlock()
    if hard is not None:  # capped at the hard limit, and said so
        assert f"memlock={hard // 1024}" in out
        assert "memlock capped" in err
    assert _events(state)[before:] == [("unknown", "intent", None), ("success", "outcome", 0)]


def test_real_run_exit_status_is_the_containers(podman_env: Path) -> None:
    state = Path(os.environ["DOLMEN_STATE_DIR"])
    before = len(_events(state)) if (state / "audit" / "audit.log").exists() else 0
    rc = main(
        [
            *("containers", "run", "--runtime", "podman", "--network", "none"),
            *("--gpus", "none", IMAGE, "--", "sh", "-c", "exit 7"),
        ]
    )
    assert rc == 7
    assert _events(state)[before:] == [("unknown", "intent", None), ("failure", "outcome", 7)]


def _hard_memlock() -> int | None:
    """The hard memlock limit the plan must cap at, or None where it may raise it."""
    from dolmen.containers.site import UNLIMITED, parse_cap_sys_resource, parse_limits

    if parse_cap_sys_resource(Path("/proc/self/status").read_text()):
        return None
    hard = parse_limits(Path("/proc/self/limits").read_text()).get("memlock")
    return None if hard is None or hard == UNLIMITED else hard
