"""The harness's configuration files: slurm.conf, gres.conf, hosts, wrappers, host trees.

Every timer is short so that the whole Slurm test module stays within minutes
on two cores; docs/slurm.md says what a real site would use instead.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dolmen.compat import UTC, tomllib
from dolmen.fsutil import atomic_write
from tests.hosts.scenarios import build

if TYPE_CHECKING:
    from tests.slurm.cluster import SlurmCluster

# A requeued job may not start again before the job credential expires (Slurm's
# default 120 s); 5 s is the smallest value Slurm 22.05 accepts.
CRED_EXPIRE_S = 5
# How long slurmctld waits for a silent slurmd before it declares the node DOWN:
# what plain Slurm's recovery waits for (the bench compares against it).
SLURMD_TIMEOUT_S = 30
HEALTH_CHECK_INTERVAL_S = 10
SRUN_PORTS = "60001-60100"
REPO = Path(__file__).resolve().parents[2]
HOOKS = ("healthcheck", "prolog", "epilog")

# Every node's host tree is the team's healthy 8x H100 scenario (tests/hosts), which
# stays healthy as checks are added; a fault is a kernel log line, as on a real node
# (the Xid 79 wording is the driver's, as quoted in ../shared/recordings/kernel-logs).
SCENARIO = "h100-hgx-healthy"
XID79 = "NVRM: Xid (PCI:0000:53:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def write_all(c: SlurmCluster, python: str) -> None:
    """Write every file the daemons, the clients and the hooks read."""
    etc = c.lab / "etc"
    hosts = ["127.0.0.1 localhost", "10.77.0.1 hub"]
    hosts += [f"{_addr(i)} n{i}" for i in range(1, c.nodes + 1)]
    (etc / "hosts").write_text("\n".join(hosts) + "\n")
    # No DNS inside the namespaces: fail fast instead of a 5-10 s stall (gotcha 3).
    (etc / "resolv.conf").write_text("nameserver 127.0.0.1\n")
    (etc / "accounting.conf").write_text("AccountingStorageType=accounting_storage/none\n")
    (etc / "gres.conf").write_text(
        "AutoDetect=off\n"
        f"NodeName=n[1-{c.nodes}] Name=gpu File={c.lab}/fakedev/nvidia[0-{c.gpus_per_node - 1}]\n"
    )
    (etc / "slurm.conf").write_text(slurm_conf(c))
    _wrappers(c, python)
    for node in c.node_names:
        set_health(c, node, healthy=True)


def slurm_conf(c: SlurmCluster) -> str:
    """slurm.conf for the harness (the points of ../shared/notes/slurm-cluster.md)."""
    lab = c.lab
    lines = [
        "ClusterName=dolmen",
        "SlurmctldHost=hub(10.77.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={lab}/munge/munge.socket,cred_expire={CRED_EXPIRE_S}",
        f"StateSaveLocation={lab}/state/ctld",
        f"SlurmdSpoolDir={lab}/state/%n/spool",
        f"SlurmctldPidFile={lab}/state/slurmctld.pid",
        f"SlurmdPidFile={lab}/state/%n/slurmd.pid",
        f"SlurmctldLogFile={lab}/logs/slurmctld.log",
        f"SlurmdLogFile={lab}/logs/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        # No cgroup binding in a container with partial cgroups: track by process tree.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        # srun listens for its steps on these ports only, so a node's nftables policy can
        # open them to the other nodes (tests/slurm/test_net_isolation.py, docs/net-prove.md).
        f"SrunPortRange={SRUN_PORTS}",
        "JobAcctGatherType=jobacct_gather/none",
        f"Include {lab}/etc/accounting.conf",
        "JobCompType=jobcomp/none",
        "SchedulerType=sched/backfill",
        # A requeued job becomes eligible by time, not by an event: only the periodic
        # schedulers start it, so their intervals bound the recovery time.
        "SchedulerParameters=nohold_on_prolog_fail,sched_interval=2,bf_interval=1",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        # Nodes declare more CPUs and memory than the 2-core machine has.
        "SlurmdParameters=config_overrides",
        "GresTypes=gpu",
        # 1, not 2: with 2 a node set DOWN flips back to IDLE as soon as slurmd answers.
        "ReturnToService=1",
        "JobRequeue=1",
        "SlurmctldTimeout=30",
        f"SlurmdTimeout={SLURMD_TIMEOUT_S}",
        "MessageTimeout=5",
        "InactiveLimit=0",
        "MinJobAge=300",
        "KillWait=2",
        f"Prolog={lab}/bin/dolmen-slurm-prolog",
        f"Epilog={lab}/bin/dolmen-slurm-epilog",
        f"HealthCheckProgram={lab}/bin/dolmen-slurm-healthcheck",
        f"HealthCheckInterval={HEALTH_CHECK_INTERVAL_S}",
        "HealthCheckNodeState=ANY",
    ]
    cpus = 16  # room for 2 x 4 ranks plus the batch script on one node
    for i in range(1, c.nodes + 1):
        lines.append(
            f"NodeName=n{i} NodeHostname=n{i} NodeAddr={_addr(i)} CPUs={cpus} "
            f"RealMemory=4000 Gres=gpu:{c.gpus_per_node} State=UNKNOWN"
        )
    lines.append(
        f"PartitionName=gpu Nodes=n[1-{c.nodes}] Default=YES DefaultTime=60 "
        "MaxTime=INFINITE State=UP"
    )
    return "\n".join(lines) + "\n"


def _wrappers(c: SlurmCluster, python: str) -> None:
    etc, conf = c.lab / "etc", c.conf
    pythonpath = f"{REPO / 'src'}:{REPO}"
    # Jobs, hooks and the watcher keep dolmen's state (audit log...) inside the lab.
    dolmen_dirs = f"DOLMEN_STATE_DIR={c.lab}/dolmen-state DOLMEN_CONFIG_DIR={c.lab}/dolmen-etc"
    # Clients run "on the login node": the hub's network namespace with the cluster's
    # /etc/hosts, in a private mount namespace of their own.
    _script(
        c.lab / "bin" / "sl",
        f"exec nsenter --net=/run/netns/{c.hub_ns} unshare --mount --propagation private "
        f"sh -c 'mount --bind {etc}/hosts /etc/hosts && "
        f'mount --bind {etc}/resolv.conf /etc/resolv.conf && exec "$@"\' sl '
        f'env SLURM_CONF={conf} PYTHONPATH={pythonpath} {dolmen_dirs} "$@"',
    )
    # slurmd runs these with a minimal environment: SLURM_CONF is not inherited
    # (gotcha 8), nor PATH to dolmen.
    env = (
        f"export SLURM_CONF={conf} PYTHONPATH={pythonpath} {dolmen_dirs} "
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
    )
    tree = f"{c.lab}/hosts/$SLURMD_NODENAME"
    log = f"{c.lab}/logs/hooks-$SLURMD_NODENAME.log"
    # slurm.conf names the console scripts a site installs (pyproject [project.scripts]);
    # the cluster runs dolmen from this checkout, so each wrapper runs its entry point
    # as pip's generated script would, plus --from the node's host tree.
    for kind in HOOKS:
        _script(
            c.lab / "bin" / f"dolmen-slurm-{kind}",
            f'{env}\necho "$(date +%T.%N) {kind}" >> {log}\n'
            f"exec {console_script(f'dolmen-slurm-{kind}', python)} --from {tree} >> {log} 2>&1",
        )


def console_script(name: str, python: str) -> str:
    """The command that runs console script ``name`` of pyproject.toml with ``python``."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, func = scripts[name].partition(":")
    return f"{python} -c 'import sys; from {module} import {func}; sys.exit({func}())'"


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def set_health(c: SlurmCluster, node: str, *, healthy: bool) -> None:
    """Make ``node``'s host tree healthy, or failing: an Xid 79 ("GPU has fallen off the
    bus") in its kernel log, stamped now so that the checks' time window counts it."""
    tree = c.tree(node)
    boot_log = c.lab / "hosts" / f".{node}.dmesg"
    if not boot_log.exists():
        build(SCENARIO, tree)
        (tree / "etc" / "hostname").write_text(f"{node}\n")
        boot_log.write_text((tree / "commands" / "dmesg").read_text())
    text = boot_log.read_text()
    if not healthy:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S,%f+00:00")
        text += f"kern  :warn  : {now} {XID79}\n"
    atomic_write(tree / "commands" / "dmesg", text.encode())


def _addr(i: int) -> str:
    return f"10.77.0.{10 + i}"
