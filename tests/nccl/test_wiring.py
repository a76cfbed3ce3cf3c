"""Where the NCCL environment reaches a launch: ``containers run`` (every runtime, the
user's --env winning, /etc/nccl.conf mounted instead, the topology file mounted), the
Slurm batch script (evaluated on the node, before the job's own variables), and the
gather of a real host tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from dolmen.containers.plan import Request, plan
from dolmen.containers.site import Site, gather
from dolmen.host.tree import TreeHost
from dolmen.jobs.slurm.sbatch import SbatchOptions, render
from dolmen.jobs.spec import JobSpec
from tests.hosts import scenarios

IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
NCCL = {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "=eth0"}


def _site(**kw: object) -> Site:
    base: dict[str, object] = {
        "installed": frozenset({"docker", "podman", "apptainer", "enroot", "pyxis"}),
        "hard_limits": {},
    }
    return Site(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("runtime", ["docker", "podman", "apptainer", "enroot", "pyxis"])
def test_every_runtime_passes_the_fabrics_variables(runtime: str) -> None:
    req = Request(IMAGE, ("python",), runtime=runtime, env=("NCCL_SOCKET_IFNAME=ib0",))
    p = plan(req, _site(nccl_env=NCCL))
    text = " ".join(p.argv)
    assert "NCCL_IB_HCA==mlx5_0:1" in text
    assert "NCCL_SOCKET_IFNAME=ib0" in text and "NCCL_SOCKET_IFNAME==eth0" not in text
    assert any("2 NCCL variables" in n for n in p.notes)


def test_a_site_nccl_conf_is_mounted_and_the_topology_file_too() -> None:
    p = plan(Request(IMAGE, ("python",), runtime="docker"), _site(nccl_conf=True, nccl_topo=True))
    assert "/etc/nccl.conf:/etc/nccl.conf:ro" in p.argv
    assert "/etc/nccl-topo.xml:/etc/nccl-topo.xml:ro" in p.argv
    assert not any(a.startswith("NCCL_") for a in p.argv)


def test_gather_reads_the_rails_tree(tmp_path: Path) -> None:
    tree = scenarios.build("h100-hgx-rails", tmp_path / "t")
    site = gather(TreeHost(tree))
    assert site.nccl_env["NCCL_IB_HCA"].startswith("=mlx5_0:1,mlx5_1:1")
    assert not site.nccl_conf and not site.nccl_topo


def test_the_batch_script_evaluates_the_node_s_environment_before_the_job_s() -> None:
    spec = JobSpec(
        name="t", command=("python", "x.py"), nodes=2, gpus_per_node=8, env={"NCCL_DEBUG": "INFO"}
    )
    script = render(spec, SbatchOptions(python="/opt/py/bin/python3"))
    lines = script.splitlines()
    at = lines.index('eval "$(/opt/py/bin/python3 -m dolmen.nccl 2>/dev/null)"')
    assert at < lines.index("export NCCL_DEBUG=INFO")
    cpu = render(JobSpec(name="t", command=("x",), nodes=1, gpus_per_node=0), SbatchOptions())
    assert "dolmen.nccl" not in cpu
