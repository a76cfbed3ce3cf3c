"""A real Slurm 22.05 cluster on one machine, for the tests (see docs/slurm.md "The harness").

One controller and N slurmd nodes, each daemon in its own network and UTS
namespace: ``<tag>-hub`` holds a bridge with 10.77.0.1/24 and slurmctld,
``<tag>-nX`` a veth with 10.77.0.1X/24 and ``slurmd -N nX``. Everything lives in
a lab folder the caller gives (a pytest temporary folder): configuration, state,
logs, the fake GPU character devices, a private munged with its own key and
socket, and one host tree per node that the health check validates.

Every process the harness starts is recorded with its PID; ``stop()`` ends them
by PID, then every process still inside the harness's namespaces (job steps),
deletes the namespaces (the bridge and veths go with them) and removes the lab.
The private mounts (/etc/hosts, /etc/resolv.conf) live only in the daemons'
own mount namespaces and vanish with them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.slurm import config as slurm_config

SUBNET = "10.77.0"
HUB_ADDR = f"{SUBNET}.1"
TAG_PREFIX = "dlmt"  # namespaces are <TAG_PREFIX><owner pid>-hub, -n1...


def node_addr(i: int) -> str:
    """The address of node ``n<i>`` on the private bridge."""
    return f"{SUBNET}.{10 + i}"


def missing_prerequisites() -> str | None:
    """Why the cluster cannot start here, or None."""
    if os.geteuid() != 0:
        return "the Slurm cluster harness needs root (network namespaces, mknod, daemons)"
    for tool in ("slurmctld", "slurmd", "munged", "sbatch", "ip", "nsenter", "unshare"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed (apt-get install slurm-wlm munge iproute2)"
    return None


@dataclass
class Proc:
    """A process the harness started."""

    name: str
    popen: subprocess.Popen[bytes]


@dataclass
class SlurmCluster:
    """The cluster; ``start()`` brings it up, ``stop()`` removes every trace of it."""

    lab: Path
    nodes: int = 3
    gpus_per_node: int = 4
    tag: str = field(default_factory=lambda: f"{TAG_PREFIX}{os.getpid()}")
    procs: dict[str, Proc] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    bringup_s: float | None = None
    _stopped: bool = False

    # --- names and paths ----------------------------------------------------------
    @property
    def hub_ns(self) -> str:
        """The controller's network namespace (also where clients run)."""
        return f"{self.tag}-hub"

    @property
    def node_names(self) -> list[str]:
        """n1..nN."""
        return [f"n{i}" for i in range(1, self.nodes + 1)]

    @property
    def conf(self) -> Path:
        """slurm.conf (clients read it through SLURM_CONF)."""
        return self.lab / "etc" / "slurm.conf"

    @property
    def client(self) -> Path:
        """The client wrapper: run a Slurm command as if on the login node."""
        return self.lab / "bin" / "sl"

    @property
    def client_prefix(self) -> tuple[str, ...]:
        """The argv prefix SlurmBackend takes to reach this cluster."""
        return (str(self.client),)

    @property
    def stopping(self) -> bool:
        """stop() has begun (or finished)."""
        return self._stopped

    def tree(self, node: str) -> Path:
        """The host tree the health check of ``node`` validates."""
        return self.lab / "hosts" / node

    # --- lifecycle ------------------------------------------------------------------
    def start(self, python: str = sys.executable) -> None:
        """Bring the cluster up and prove every node idle (raises RuntimeError otherwise)."""
        t0 = time.monotonic()
        cleanup_stale()
        for d in ("etc", "bin", "state/ctld", "logs", "fakedev", "munge", "out", "ckpt", "hosts"):
            (self.lab / d).mkdir(parents=True, exist_ok=True)
        for g in range(self.gpus_per_node):
            dev = self.lab / "fakedev" / f"nvidia{g}"
            if not dev.exists():
                # GRES File= must be a character device (gotcha 2); 1:3 is /dev/null's.
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))
        slurm_config.write_all(self, python)
        self._start_munge()
        self._network()
        self._spawn(
            "slurmctld", self.hub_ns, "hub", ["slurmctld", "-D", "-c", "-f", str(self.conf)]
        )
        for name in self.node_names:
            self.start_slurmd(name)
        self.wait_idle(self.node_names, timeout=60)
        self.bringup_s = time.monotonic() - t0

    def start_slurmd(self, node: str) -> None:
        """(Re)start the slurmd of ``node``."""
        (self.lab / "state" / node / "spool").mkdir(parents=True, exist_ok=True)
        self._spawn(
            f"slurmd-{node}",
            f"{self.tag}-{node}",
            node,
            ["slurmd", "-D", "-N", node, "-f", str(self.conf)],
        )

    def restart_slurmctld(self) -> None:
        """Stop slurmctld and start it again keeping its saved state (no -c)."""
        self.kill("slurmctld", signal.SIGTERM)
        self._spawn("slurmctld", self.hub_ns, "hub", ["slurmctld", "-D", "-f", str(self.conf)])
        deadline = time.monotonic() + 30
        while self.sl("scontrol", "ping", check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("slurmctld did not come back")
            time.sleep(0.2)

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL, wait: float = 10.0) -> None:
        """Send ``sig`` to a recorded daemon and wait for it to exit."""
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.popen.send_signal(sig)
        try:
            proc.popen.wait(wait)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.popen.kill()
            proc.popen.wait(5)

    def restore(self) -> None:
        """Back to a clean cluster between tests: no jobs, every node healthy and idle."""
        from tests.slurm.config import set_health

        self.sl("scancel", "--full", "--user=root", check=False)
        for node in self.node_names:
            set_health(self, node, healthy=True)
            if f"slurmd-{node}" not in self.procs:
                self.start_slurmd(node)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = self.node_states()
            if all(states.get(n) == "idle" for n in self.node_names):
                return
            for node, state in states.items():
                if state.startswith(("drain", "down", "fail")):
                    self.sl("scontrol", "update", f"nodename={node}", "state=resume", check=False)
            time.sleep(0.5)
        raise RuntimeError(f"cluster not restored: {self.node_states()}")

    def crash_node(self, node: str) -> None:
        """A node dies: its slurmd and everything running in its namespace are killed."""
        self.kill(f"slurmd-{node}")
        for pid in self.ns_pids(f"{self.tag}-{node}"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        """Tear everything down by PID: job processes, daemons, namespaces, lab. Idempotent.

        SIGINT and SIGTERM are held back meanwhile (a second Ctrl-C must not leave
        half a cluster behind) and delivered once everything is gone.
        """
        if self._stopped:
            return
        self._stopped = True
        held = {signal.SIGINT, signal.SIGTERM}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            self._teardown()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def _teardown(self) -> None:
        # Job processes first (test workloads, slurmstepd): then slurmd exits at once.
        daemons = {p.popen.pid for p in self.procs.values()}
        for ns in self.namespaces:
            for pid in self.ns_pids(ns):
                if pid not in daemons:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
        names = [n for n in self.procs if n != "munged"]
        for name in names:
            with contextlib.suppress(ProcessLookupError):
                self.procs[name].popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for name in names:
            self.kill(name, signal.SIGTERM, wait=max(0.1, deadline - time.monotonic()))
        for ns in self.namespaces:
            for pid in self.ns_pids(ns):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.kill("munged", signal.SIGTERM, wait=5)
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        self.namespaces.clear()
        if not os.environ.get("DOLMEN_KEEP_SLURM_LAB"):
            shutil.rmtree(self.lab, ignore_errors=True)

    # --- clients ----------------------------------------------------------------------
    def sl(
        self, *argv: str, check: bool = True, timeout: float = 30.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against the cluster."""
        res = subprocess.run(
            [str(self.client), *argv], capture_output=True, text=True, timeout=timeout
        )
        if check and res.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {res.returncode}: {res.stderr.strip()}")
        return res

    def node_states(self) -> dict[str, str]:
        """Node name -> sinfo's compact state (idle, alloc, drain, down*...)."""
        out = self.sl("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout
        return dict(line.split(None, 1) for line in out.splitlines() if " " in line)

    def node_reason(self, node: str) -> str:
        """The reason sinfo shows for ``node`` ("none" when it has none)."""
        return self.sl("sinfo", "-h", "-n", node, "-N", "-o", "%E").stdout.strip()

    def wait_idle(self, nodes: Sequence[str], timeout: float = 60.0) -> None:
        """Wait until every node in ``nodes`` is idle; RuntimeError with the states if not."""
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.node_states()
            if all(states.get(n) == "idle" for n in nodes):
                return
            time.sleep(0.2)
        raise RuntimeError(f"nodes not idle after {timeout:g} s: {states}; logs in {self.lab}")

    def ns_pids(self, ns: str) -> list[int]:
        """Processes inside a network namespace."""
        res = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        return [int(p) for p in res.stdout.split() if p.isdigit()]

    # --- internals --------------------------------------------------------------------
    def _start_munge(self) -> None:
        key = self.lab / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o400)
        d = self.lab / "munge"
        d.chmod(0o755)
        self._popen(
            "munged",
            [
                "/usr/sbin/munged",
                "-F",
                "--force",  # runs as root, in a folder under /tmp
                f"--socket={d / 'munge.socket'}",
                f"--key-file={key}",
                f"--pid-file={d / 'munged.pid'}",
                f"--seed-file={d / 'munged.seed'}",
                f"--log-file={self.lab / 'logs' / 'munged.log'}",
            ],
        )
        sock = d / "munge.socket"
        deadline = time.monotonic() + 10
        while not sock.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("munged did not create its socket")
            time.sleep(0.05)

    def _network(self) -> None:
        hub = self.hub_ns
        self._ns_add(hub)
        ipn = ["ip", "-n", hub]
        _run([*ipn, "link", "set", "lo", "up"])
        _run([*ipn, "link", "add", "br0", "type", "bridge"])
        _run([*ipn, "addr", "add", f"{HUB_ADDR}/24", "dev", "br0"])
        _run([*ipn, "link", "set", "br0", "up"])
        for i, name in enumerate(self.node_names, start=1):
            ns = self.attach(name, node_addr(i))
            _run(["ip", "-n", ns, "route", "add", "default", "via", HUB_ADDR])

    def attach(self, name: str, addr: str) -> str:
        """A namespace ``TAG-NAME`` on the hub's bridge at ``addr`` (its eth0, no route
        beyond the subnet); recorded in ``namespaces``, so teardown deletes it."""
        ns, ipn = f"{self.tag}-{name}", ["ip", "-n", self.hub_ns]
        self._ns_add(ns)
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _run([*ipn, "link", "add", f"vh-{name}", "type", "veth", "peer", "name", "eth0"])
        _run([*ipn, "link", "set", "eth0", "netns", ns])
        _run([*ipn, "link", "set", f"vh-{name}", "master", "br0", "up"])
        _run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
        _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        return ns

    def _ns_add(self, ns: str) -> None:
        _run(["ip", "netns", "add", ns])
        self.namespaces.append(ns)

    def _spawn(self, name: str, ns: str, hostname: str, argv: list[str]) -> None:
        """Start a daemon in its own UTS and mount namespace inside ``ns``.

        Not ``ip netns exec``: it remounts /sys, hiding /sys/fs/cgroup, and slurmd
        22.05 then refuses to start (gotcha 1). nsenter, unshare and sh all exec,
        so the PID recorded is the daemon's own.
        """
        etc = self.lab / "etc"
        script = (
            f"hostname {hostname} && mount --bind {etc}/hosts /etc/hosts && "
            f'mount --bind {etc}/resolv.conf /etc/resolv.conf && exec "$@"'
        )
        self._popen(
            name,
            [
                "nsenter",
                f"--net=/run/netns/{ns}",
                "unshare",
                "--uts",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                script,
                name,
                *argv,
            ],
        )

    def _popen(self, name: str, argv: list[str]) -> None:
        log = open(self.lab / "logs" / f"{name}.stdout", "ab")  # noqa: SIM115 - owned by the child
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "SLURM_CONF": str(self.conf)},
            )
        finally:
            log.close()
        self.procs[name] = Proc(name, popen)


def _run(argv: list[str]) -> None:
    res = subprocess.run(argv, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {res.stderr.strip()}")


def cleanup_stale() -> None:
    """Delete namespaces left by a harness whose process is gone (a killed test run)."""
    res = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    for line in res.stdout.splitlines():
        ns = line.split()[0] if line.split() else ""
        if not ns.startswith(TAG_PREFIX):
            continue
        owner = ns[len(TAG_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and int(owner) != os.getpid() and not Path(f"/proc/{owner}").exists():
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for p in pids.stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(p), signal.SIGKILL)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
