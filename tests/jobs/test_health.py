"""GPU health as the supervisor judges it, and a restart when a GPU a job uses turns bad.

Host trees are built in tmp_path from a real 8 x H100 ``nvidia-smi -q -x`` recording; the
"lost" variant makes GPU 1 answer ``GPU is lost``, as the driver does after an XID 79.
The supervisor reads its GPUs and their health from the tree (DOLMEN_JOBS_HEALTH_FROM /
``health_from``) while the ranks run here; the test swaps a symbolic link from the healthy
tree to the lost one mid-run.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from dolmen.host.tree import TreeHost
from dolmen.jobs.backend import JobState
from dolmen.jobs.local.health import judge
from dolmen.jobs.spec import JobSpec
from tests.conftest import make_tree, recording
from tests.jobs.conftest import make_local, stop_all, wait_for

H100 = "nvidia-smi-xml/k8s-test-infra__hardware__qx-h100.xml"
XID79 = (
    "NVRM: Xid (PCI:0000:75:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
)


def h100_xml() -> str:
    return recording(H100).read_text()


def lose_gpu(xml: str, position: int) -> str:
    """The same document with one GPU answering 'GPU is lost' (nvidia-smi's own words)."""
    head, *blocks = xml.split('<gpu id="')
    blocks[position] = blocks[position].replace(
        "<gpu_util>0 %</gpu_util>", "<gpu_util>GPU is lost</gpu_util>", 1
    )
    assert "GPU is lost" in blocks[position]
    return '<gpu id="'.join([head, *blocks])


def tree(root: Path, xml: str, dmesg: str | None = None) -> Path:
    commands = {"nvidia-smi -q -x": xml}
    if dmesg is not None:
        commands["dmesg"] = dmesg
    return make_tree(root, commands=commands)


def test_healthy_h100_has_eight_good_gpus(tmp_path: Path) -> None:
    health = judge(TreeHost(tree(tmp_path, h100_xml())))
    assert health.gpus == tuple(range(8))
    assert health.bad == {}
    assert health.healthy == tuple(range(8))


def test_a_lost_gpu_is_unhealthy(tmp_path: Path) -> None:
    health = judge(TreeHost(tree(tmp_path, lose_gpu(h100_xml(), 1))))
    assert set(health.bad) == {1}
    assert "lost" in health.bad[1]
    assert health.healthy == (0, 2, 3, 4, 5, 6, 7)


def test_no_inventory_is_undecided_not_healthy(tmp_path: Path) -> None:
    health = judge(TreeHost(make_tree(tmp_path)))
    assert health.gpus == ()
    assert health.undecided and "no GPU inventory" in health.undecided[0]


def test_xid79_in_the_kernel_log(tmp_path: Path) -> None:
    health = judge(TreeHost(tree(tmp_path, h100_xml(), f"[ 1234.567890] {XID79}\n")))
    if not health.bad:
        pytest.skip("no registered quick gpu check fails on an XID 79 in the kernel log yet")
    assert set(health.bad) == {2}  # bus 75 is the third GPU


@pytest.fixture
def host_link(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(link, healthy tree, tree with GPU 1 lost); the link points at the healthy one."""
    xml = h100_xml()
    healthy = tree(tmp_path / "healthy", xml)
    lost = tree(tmp_path / "lost", lose_gpu(xml, 1))
    link = tmp_path / "host"
    link.symlink_to(healthy)
    return link, healthy, lost


def xid79_tree(root: Path) -> Path:
    """GPU 2 (bus 75) fell off the bus, as its Xid 79 in the kernel log says."""
    bad = tree(root, h100_xml(), f"[ 1234.567890] {XID79}\n")
    if not judge(TreeHost(bad)).bad:
        pytest.skip("no registered quick gpu check fails on an XID 79 in the kernel log yet")
    return bad


def swap(link: Path, target: Path) -> None:
    tmp = link.with_name(link.name + ".new")
    tmp.symlink_to(target)
    os.replace(tmp, link)  # atomic: the supervisor sees one tree or the other


PRINT_AND_WAIT = (
    "import os, time; "
    "print('gpus', os.environ['CUDA_VISIBLE_DEVICES'], 'restart', "
    "os.environ['DOLMEN_RESTART_COUNT'], flush=True); "
    "time.sleep(60 if os.environ['DOLMEN_RESTART_COUNT'] == '0' else 0)"
)


@pytest.mark.parametrize(("fault", "bad"), [("lost", 1), ("xid79", 2)])
def test_gpu_turning_unhealthy_restarts_the_job_without_it(
    state: Path, tmp_path: Path, host_link: tuple[Path, Path, Path], fault: str, bad: int
) -> None:
    """The job holds GPUs 0..bad; GPU ``bad`` turns unhealthy; the job restarts once on the
    others plus the next free one, and the rank that had the bad GPU gets the new one."""
    link, _, lost = host_link
    unhealthy = lost if fault == "lost" else xid79_tree(tmp_path / "xid79")
    gpus = 2 if fault == "lost" else 3
    local = make_local(health_from=str(link))
    try:
        spec = JobSpec(
            name="gpu-job",
            command=(sys.executable, "-c", PRINT_AND_WAIT),
            gpus_per_node=gpus,
            max_restarts=1,
        )
        job = local.submit(spec)
        wait_for(
            lambda: local.status(job.job_id).details["ranks_running"] == str(gpus), what="ranks"
        )
        first = ",".join(map(str, range(gpus)))
        assert local.status(job.job_id).details["gpus"] == first
        swap(link, unhealthy)
        final = wait_for(lambda: (s := local.status(job.job_id)).state.done and s, timeout=30)
        assert final.state is JobState.COMPLETED, local.store.events(int(job.job_id))
        assert final.restarts == 1
        assert list(json.loads(final.details["excluded_gpus"])) == [str(bad)]
        events = local.store.events(int(job.job_id))
        restart = next(e.message for e in events if e.kind == "restart")
        assert f"unhealthy GPU in use: GPU {bad}" in restart
        allocations = [e.message for e in events if e.kind == "allocate"]
        again = ",".join(str(g) for g in range(gpus + 1) if g != bad)
        assert allocations == [f"GPUs {first}", f"GPUs {again}"]
        moved = again.split(",")[bad]
        assert f"gpus {moved} restart 1" in "\n".join(local.logs(job.job_id, rank=bad))
    finally:
        stop_all(local)


def test_too_few_healthy_gpus_fails_with_the_reason(
    state: Path, host_link: tuple[Path, Path, Path]
) -> None:
    link, _, lost = host_link
    swap(link, lost)
    local = make_local(health_from=str(link))
    try:
        job = local.submit(JobSpec(name="big", command=("true",), nodes=2, gpus_per_node=4))
        final = wait_for(lambda: (s := local.status(job.job_id)).state.done and s, timeout=30)
        assert final.state is JobState.FAILED
        assert final.reason == "needs 8 healthy GPUs (2 x 4), this host has 7"
    finally:
        stop_all(local)


def test_an_elastic_job_shrinks_to_the_healthy_gpus(
    state: Path, host_link: tuple[Path, Path, Path]
) -> None:
    link, _, lost = host_link
    swap(link, lost)
    local = make_local(health_from=str(link))
    try:
        spec = JobSpec(
            name="elastic",
            command=(sys.executable, "-c", "import os; print(os.environ['WORLD_SIZE'])"),
            nodes=2,
            gpus_per_node=4,
            procs_per_node=1,
            elastic=True,
            min_nodes=1,
        )
        job = local.submit(spec)
        final = wait_for(lambda: (s := local.status(job.job_id)).state.done and s, timeout=30)
        assert final.state is JobState.COMPLETED
        assert final.nodes == ("local:0",)
        events = local.store.events(int(job.job_id))
        assert [e.message for e in events if e.kind == "allocate"] == ["GPUs 0,2,3,4"]
        assert list(local.logs(job.job_id, rank=0))[-1] == "1"  # WORLD_SIZE
    finally:
        stop_all(local)
