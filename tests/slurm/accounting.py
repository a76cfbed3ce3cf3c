"""Slurm accounting for the harness: MariaDB and slurmdbd in the controller's namespaces.

MariaDB (Debian mariadb-server) listens on the hub namespace's own loopback;
slurmdbd runs with hostname ``hub`` (it must equal DbdHost) and reads
slurmdbd.conf next to slurm.conf (it has no -f). slurm.conf then switches to
``accounting_storage/slurmdbd`` with ``AccountingStorageEnforce=...,limits`` so
that GrpTRES=gres/gpu=N limits bite, and slurmctld restarts keeping its state.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from tests.slurm.cluster import SlurmCluster

DB_PASSWORD = "dolmen-test-only"


def missing() -> str | None:
    """Why accounting cannot run here, or None."""
    for tool in ("mariadbd", "mariadb-install-db", "slurmdbd", "sacctmgr"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed (apt-get install mariadb-server slurmdbd)"
    return None


def enable(c: SlurmCluster) -> float:
    """Start MariaDB and slurmdbd, switch slurmctld to them; the seconds it took."""
    t0 = time.monotonic()
    db = c.lab / "mysql"
    db.mkdir(exist_ok=True)
    sock = db / "mysqld.sock"
    subprocess.run(
        [
            "mariadb-install-db",
            "--user=root",
            f"--datadir={db / 'data'}",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
        ],
        capture_output=True,
        check=True,
    )
    c._spawn(
        "mariadbd",
        c.hub_ns,
        "hub",
        [
            "mariadbd",
            "--no-defaults",
            "--user=root",
            f"--datadir={db / 'data'}",
            f"--socket={sock}",
            "--bind-address=127.0.0.1",
            "--port=3306",
            f"--pid-file={db / 'mariadbd.pid'}",
            f"--log-error={c.lab / 'logs' / 'mariadb.err'}",
            "--innodb-buffer-pool-size=32M",
            "--innodb-log-file-size=8M",
            "--skip-log-bin",
        ],
    )
    _wait(lambda: _ok(["mariadb-admin", f"--socket={sock}", "ping"]), 60, "MariaDB")
    sql = (
        f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}';"
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
    )
    subprocess.run(["mariadb", f"--socket={sock}", "-u", "root", "-e", sql], check=True)
    conf = c.lab / "etc" / "slurmdbd.conf"
    conf.write_text(
        "AuthType=auth/munge\n"
        f"AuthInfo=socket={c.lab}/munge/munge.socket\n"
        "DbdHost=hub\nDbdAddr=10.77.0.1\nDbdPort=6819\nSlurmUser=root\nDebugLevel=info\n"
        f"LogFile={c.lab}/logs/slurmdbd.log\nPidFile={c.lab}/state/slurmdbd.pid\n"
        "StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\nStoragePort=3306\n"
        f"StorageUser=slurm\nStoragePass={DB_PASSWORD}\nStorageLoc=slurm_acct_db\n"
    )
    conf.chmod(0o600)
    # sacctmgr refuses to talk to slurmdbd until slurm.conf names it (gotcha 6).
    (c.lab / "etc" / "accounting.conf").write_text(
        "AccountingStorageType=accounting_storage/slurmdbd\n"
        "AccountingStorageHost=hub\n"
        # For the slurmdbd plugin this names the MUNGE socket (our private munged's).
        f"AccountingStoragePass={c.lab}/munge/munge.socket\n"
        "AccountingStorageTRES=gres/gpu\n"
        "AccountingStorageEnforce=associations,limits,qos,safe\n"
    )
    c._spawn("slurmdbd", c.hub_ns, "hub", ["slurmdbd", "-D"])
    _wait(lambda: c.sl("sacctmgr", "-n", "list", "cluster", check=False).returncode == 0, 60, "dbd")
    c.sl("sacctmgr", "-i", "add", "cluster", "dolmen", check=False)
    c.restart_slurmctld()
    # slurmds re-read slurm.conf (its Include changed), else CONF_HASH warnings.
    c.sl("scontrol", "reconfigure")
    c.wait_idle(c.node_names, timeout=60)
    return time.monotonic() - t0


def _ok(argv: list[str]) -> bool:
    return subprocess.run(argv, capture_output=True).returncode == 0


def _wait(pred: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up in {timeout:g} s")
        time.sleep(0.2)
