"""packaging/container/Containerfile built and run with a real podman, offline.

The base is made here (tests/packaging/image.py: this machine's Debian Python, busybox and
the test virtualenv's dependencies, ``podman import``ed: no registry is reachable), the
wheel is built from this checkout, and the Containerfile's build step runs unchanged with
``PIP_FLAGS="--no-index --no-deps"``. Podman runs with private configuration and storage
under tmp_path (runc: crun cannot run on these hybrid-cgroup machines), no network.

The running image must: judge a host tree mounted into it; read the host through the mounts
docs/deploy.md lists (/proc by --pid host, /sys, /dev, the host's os-release) on a read-only
root with only the state volume writable; and find nvidia-smi under the GPU operator's
driver root (/run/nvidia/driver/usr/bin), here a stand-in replaying a recorded
``nvidia-smi -q -x`` of an 8x H100 node."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dolmen import demo
from dolmen.host.command import command_key
from dolmen.report.schemas import load as load_schema
from tests.packaging import image
from tests.packaging.common import PACKAGING
from tests.podman import Podman
from tests.wheel import dolmen_wheel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        sys.version_info[:2] != (3, 11),
        reason="the offline image is made of Debian's python3.11 and this venv's 3.11 wheels",
    ),
]

RUNC = shutil.which("runc")
TAG = "localhost/dolmen-agent:test"
BASE = "localhost/dolmen-base:test"


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Podman]:
    if shutil.which("podman") is None or RUNC is None:
        pytest.skip("podman or runc is not installed (Debian: podman, runc)")
    why = image.missing()
    if why:
        pytest.skip(f"cannot build the offline base image: {why}")
    work = tmp_path_factory.mktemp("podman")
    p = Podman(work, driver="overlay")
    try:
        tar = image.rootfs_tar(image.build_rootfs(work / "rootfs"), work / "rootfs.tar")
        shutil.rmtree(work / "rootfs")
        done = p("import", str(tar), BASE)
        assert done.returncode == 0, done.stderr
        tar.unlink()
        ctx = work / "context"
        ctx.mkdir()
        dolmen_wheel(ctx)
        done = p(
            "build", "--network", "none", "-f", str(PACKAGING / "container/Containerfile"),
            "--build-arg", f"BASE={BASE}", "--build-arg", "PIP_FLAGS=--no-index --no-deps",
            "-t", TAG, str(ctx),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        yield p
    finally:
        p("rm", "--all", "--force")
        p("rmi", "--all", "--force")
        p("system", "reset", "--force")


def test_the_image_holds_this_dolmen(podman: Podman) -> None:
    done = podman.run(TAG, "--version")
    assert done.returncode == 0 and done.stdout.strip() == "dolmen, version 0.1.0", done.stderr
    meta = json.loads(podman("image", "inspect", TAG).stdout)[0]["Config"]
    assert meta["Entrypoint"] == ["/opt/dolmen/bin/dolmen"]
    assert meta["Cmd"] == ["serve", "--state", "/var/lib/dolmen"]
    assert "/var/lib/dolmen" in meta["Volumes"]


def test_judges_a_host_tree_mounted_into_it(podman: Podman, tmp_path: Path) -> None:
    tree = demo.build_sample("hgx-h100-xid79", tmp_path / "xid79")
    done = podman.run(
        "--read-only", "-v", f"{tree}:/tree:ro", TAG, "validate", "--from", "/tree", "--json"
    )
    assert done.returncode == 1, done.stderr  # unhealthy: GPU 3 fell off the bus
    import jsonschema

    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, load_schema("verdict"))
    assert verdict["status"] == "unhealthy"


def _driver_root(tmp_path: Path, sample: str = "hgx-h100") -> Path:
    """A stand-in driver root: usr/bin/nvidia-smi replays the sample node's recorded XML."""
    tree = demo.build_sample(sample, tmp_path / f"{sample}-for-driver")
    root = tmp_path / "driver"
    (root / "usr/bin").mkdir(parents=True)
    shutil.copy2(tree / "commands" / command_key(["nvidia-smi", "-q", "-x"]), root / "q-x.xml")
    smi = root / "usr/bin/nvidia-smi"
    smi.write_text(
        '#!/bin/sh\ncase "$*" in\n  "-q -x") exec cat /run/nvidia/driver/q-x.xml ;;\n'
        '  *) echo "stand-in nvidia-smi: only -q -x" >&2; exit 9 ;;\nesac\n'
    )
    smi.chmod(0o755)
    return root


def _live(podman: Podman, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return podman.run(
        "--read-only", "--pid", "host",
        "-v", "/sys:/sys:ro", "-v", "/dev:/dev:ro",
        "-v", f"{_driver_root(tmp_path)}:/run/nvidia/driver:ro",
        "-v", "/etc/os-release:/etc/os-release:ro",
        "-v", f"{state}:/var/lib/dolmen",
        TAG, *args,
    )  # fmt: skip


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_finds_nvidia_smi_under_the_driver_root(podman: Podman, tmp_path: Path) -> None:
    done = _live(podman, tmp_path, "facts", "--only", "gpu", "--json")
    assert done.returncode == 0, done.stderr
    gpus = _json(done)["gpu"]["gpus"]
    assert len(gpus) == 8 and {g["name"] for g in gpus} == {"NVIDIA H100 80GB HBM3"}


def test_reads_the_host_through_its_mounts(podman: Podman, tmp_path: Path) -> None:
    done = _live(podman, tmp_path, "facts", "--only", "os", "--only", "cpu", "--json")
    assert done.returncode == 0, done.stderr
    facts = _json(done)
    host_os = dict(
        line.split("=", 1)
        for line in Path("/etc/os-release").read_text().split("\n")
        if "=" in line
    )  # the image's own says "dolmen test base"
    assert facts["os"]["distribution"]["pretty_name"] == host_os["PRETTY_NAME"].strip('"')
    online = Path("/sys/devices/system/cpu/online").read_text().strip()
    expected = [
        n
        for part in online.split(",")
        for n in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)
    ]
    assert facts["cpu"]["online"] == expected  # /sys of the host, mounted


def test_validates_live_on_a_read_only_root(podman: Podman, tmp_path: Path) -> None:
    """A verdict comes out (the stand-in GPUs: no NVML, so some signals are unknown); the
    exit code is one of the documented three, never a crash of the read-only image."""
    done = _live(podman, tmp_path, "validate", "--level", "quick", "--json")
    assert done.returncode in (0, 1, 2), done.stderr
    verdict = _json(done)
    assert verdict["level"] == "quick" and verdict["status"] in (
        "healthy", "degraded", "unhealthy", "undecided",
    )  # fmt: skip


def test_the_run_label_mounts_the_node_read_only_at_host(podman: Podman) -> None:
    labels = json.loads(podman("image", "inspect", TAG).stdout)[0]["Config"]["Labels"]
    run = labels["RUN"].split()
    assert run[-1] == "IMAGE" and "-v" in run
    mounts = [run[i + 1] for i, a in enumerate(run) if a == "-v"]
    assert "/:/host:ro,rslave" in mounts and "DOLMEN_HOST_ROOT=/host" in run
    assert "/run/nvidia/driver:/run/nvidia/driver:ro,rslave" in mounts


_FETCH = """
import json, sys, time, urllib.request, urllib.error
end = time.monotonic() + 150
while True:
    try:
        urllib.request.urlopen("http://127.0.0.1:9405/readyz", timeout=5)
        break
    except (urllib.error.URLError, OSError) as e:
        if time.monotonic() > end:
            sys.exit(f"never ready: {e}")
        time.sleep(0.5)
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9405/v1/verdict/latest").read().decode())
"""


def test_the_agent_serves_a_verdict_of_the_node_mounted_at_host(
    podman: Podman, tmp_path: Path
) -> None:
    """dolmen serve in the image, DOLMEN_HOST_ROOT=/host, a host tree mounted there read-only
    (its files stand for the node's /), the stand-in driver root replaying that node's
    nvidia-smi: the verdict served over HTTP is of the node, not of the container."""
    import jsonschema

    tree = demo.build_sample("hgx-h100-xid79", tmp_path / "node")
    state = tmp_path / "state"
    state.mkdir()
    name = "dolmen-agent-host-root"
    started = podman(
        "run", "-d", "--rm", "--name", name, "--network", "none", "--read-only",
        "-v", f"{tree}:/host:ro", "-e", "DOLMEN_HOST_ROOT=/host",
        "-v", f"{_driver_root(tmp_path, 'hgx-h100-xid79')}:/run/nvidia/driver:ro",
        "-v", f"{state}:/var/lib/dolmen",
        TAG, "serve", "--interval", "1h", "--state", "/var/lib/dolmen",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        got = podman("exec", name, "/opt/dolmen/bin/python", "-c", _FETCH, timeout=240)
        assert got.returncode == 0, got.stderr + podman("logs", name).stderr
        verdict = json.loads(got.stdout)
    finally:
        podman("rm", "--force", name)
    jsonschema.validate(verdict, load_schema("verdict"))
    assert verdict["host"] == (tree / "etc/hostname").read_text().strip() == "h100-node-01"
    assert verdict["source"] == {"kind": "live", "root": "/host", "hostname": "h100-node-01"}
    assert verdict["level"] == "quick"
    os_name = verdict["inventory"]["host"]["os"]
    assert f'PRETTY_NAME="{os_name}"' in (tree / "etc/os-release").read_text()
    assert verdict["inventory"]["gpus"]["count"] == 8  # the driver root's nvidia-smi
    assert (state / "serve/agent.db").is_file()  # the history, on the state volume


def test_a_host_root_that_is_not_mounted_is_one_line(podman: Podman) -> None:
    done = podman.run("--read-only", "-e", "DOLMEN_HOST_ROOT=/host", TAG, "serve")
    assert done.returncode == 2, done.stderr
    assert "--host-root: no such folder" in done.stderr and "/host" in done.stderr
