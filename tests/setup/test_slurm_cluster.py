"""The generated node line and gres.conf, given to a real slurmctld and slurmd.

The harness of tests/slurm (cluster.py) starts one node, ``n1``, whose host tree is the
healthy 8x H100 scenario; its slurm.conf node line and its gres.conf are not the
harness's but what ``dolmen setup`` wrote from that tree (File= pointing at the
harness's fake GPU character devices, the only devices a namespace node has). slurmd
registering the node idle, and ``scontrol show node`` holding the CPUs, sockets, memory
and GRES of the line, prove Slurm accepts them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dolmen.cli.main import main
from tests.slurm import config as slurm_config
from tests.slurm.cluster import TAG_PREFIX, SlurmCluster, cleanup_stale, missing_prerequisites

pytestmark = pytest.mark.slurm


class GeneratedCluster(SlurmCluster):
    """The harness's cluster, with n1's node line and gres.conf from ``dolmen setup``."""

    def start(self, python: str = sys.executable) -> None:
        cleanup_stale()
        for d in ("etc", "bin", "state/ctld", "logs", "fakedev", "munge", "out", "ckpt", "hosts"):
            (self.lab / d).mkdir(parents=True, exist_ok=True)
        for g in range(self.gpus_per_node):
            os.mknod(self.lab / "fakedev" / f"nvidia{g}", 0o666 | 0o020000, os.makedev(1, 3))
        slurm_config.write_all(self, python)
        self.generate()
        self._start_munge()
        self._network()
        argv = ["slurmctld", "-D", "-c", "-f", str(self.conf)]
        self._spawn("slurmctld", self.hub_ns, "hub", argv)
        self.start_slurmd("n1")
        self.wait_idle(["n1"], timeout=60)

    def generate(self) -> None:
        """Drop the harness's node and partition lines and gres.conf; run dolmen setup."""
        lines = self.conf.read_text().splitlines()
        keep = [x for x in lines if not x.startswith(("NodeName=", "PartitionName="))]
        partition = [x for x in lines if x.startswith("PartitionName=")]
        self.conf.write_text("\n".join(keep) + "\n")
        gres = self.lab / "etc" / "gres.conf"
        gres.write_text("")
        rc = main(
            [
                "setup",
                "--from",
                str(self.tree("n1")),
                "--yes",
                "--skip",
                "validate,tune,users",
                "--node-name",
                "n1",
                "--slurm-conf",
                str(self.conf),
                "--gres-conf",
                str(gres),
                "--device",
                f"{self.lab}/fakedev/nvidia{{index}}",
            ]
        )
        assert rc == 0
        with self.conf.open("a") as f:  # the partition after the node it names
            f.write("\n".join(partition) + "\n")


def test_slurmd_accepts_the_generated_node_line_and_gres_conf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    why = missing_prerequisites()
    if why:
        pytest.skip(why)
    # A tag of its own: tests/slurm's session cluster (same pid, so the same default tag)
    # may still hold <tag>-hub when this test runs in the same session.
    tag = f"{TAG_PREFIX}{os.getpid()}-setup"
    cluster = GeneratedCluster(tmp_path / "lab", nodes=1, gpus_per_node=8, tag=tag)
    try:
        cluster.start()
        capsys.readouterr()
        conf = cluster.conf.read_text()
        assert "NodeName=n1 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2" in conf
        gres = (cluster.lab / "etc" / "gres.conf").read_text()
        assert f"File={cluster.lab}/fakedev/nvidia4 Cores=56-111" in gres
        node = cluster.sl("scontrol", "show", "node", "n1").stdout
        print(node)
        for want in (
            "CPUTot=224",
            "Sockets=2",
            "CoresPerSocket=56",
            "ThreadsPerCore=2",
            "RealMemory=2063903",
            "Gres=gpu:h100:8",
            "State=IDLE",
        ):
            assert want in node, (want, node)
        # a GPU job lands on it: slurmd took the GRES with their files (the job sees two)
        job = cluster.sl("srun", "-N1", "--gres=gpu:h100:2", "printenv", "CUDA_VISIBLE_DEVICES")
        assert job.stdout.strip().count(",") == 1, job
    finally:
        cluster.stop()
