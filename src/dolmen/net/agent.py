"""The probe agent of ``dolmen net prove``: a listener and a prober, run inside each node.

    python -m dolmen.net.agent listen --name N [--tcp P,P] [--udp P,P] [--bind ADDR]
        [--max-seconds S]
    python -m dolmen.net.agent probe --name N --timeout S --probe ID,PROTO,ADDR,PORT ...

It runs where the node's network is: through ``ip netns exec`` in the tests, through
ssh or srun on a cluster. It imports nothing but the standard library, so it starts
fast and needs no dolmen configuration there. Every argument is shell-safe (ssh joins
argv into one shell line).

The listener binds every port it is given, prints one ``ready`` line (what it bound and
what it could not: a port a real service holds), then one ``seen`` line per probe that
reached it, flushed at once (a listener killed half-way has still told what it saw),
and echoes each probe back with its own name. The prober runs all its probes at once,
one thread each, each bounded by ``--timeout``, and prints one JSON document.

Why an echo, for UDP: a datagram has no handshake, so "no answer" alone cannot tell a
firewall's drop from a lost reply. The listener's ``seen`` lines are the second witness:
seen and echoed is ``open``; seen but no echo came back is ``one-way`` (the request went
through: the reply path is blocked); not seen and no echo is ``dropped``; an ICMP error
is ``refused`` or ``unreachable`` (a reject rule: our listener holds the port). The
listener's liveness is checked by ``prove``, so a dead listener is never read as a drop.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import select
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence

PROBE = b"dolmen-probe "
ECHO = b"dolmen-echo "
_MAX = 256  # bytes of a probe or an echo: a nonce and a name
_TRIES = 3  # SYNs or datagrams per probe within its time limit (see _connect)


# --- the listener ----------------------------------------------------------------------
def _emit(doc: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(doc, sort_keys=True) + "\n")
    sys.stdout.flush()


def _bind(proto: str, port: int, family: int, address: str) -> socket.socket:
    kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
    sock = socket.socket(family, kind)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6 and not address:  # both families where the kernel allows
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind((address or ("::" if family == socket.AF_INET6 else "0.0.0.0"), port))
    if proto == "tcp":
        sock.listen(512)
    sock.setblocking(False)
    return sock


def _nonce(data: bytes) -> str | None:
    if not data.startswith(PROBE):
        return None
    return data[len(PROBE) :].split(b"\n", 1)[0].decode("ascii", "replace")[:64]


def listen(
    name: str, tcp: Sequence[int], udp: Sequence[int], max_seconds: float, address: str = ""
) -> int:
    """Bind (``address``, else every address), print ``ready``, echo and report probes
    until SIGTERM or ``max_seconds``."""
    if address:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
    else:
        family = socket.AF_INET6 if socket.has_ipv6 and _v6_works() else socket.AF_INET
    sel = selectors.DefaultSelector()
    bound: dict[str, list[int]] = {"tcp": [], "udp": []}
    failed: dict[str, str] = {}
    for proto, ports in (("tcp", tcp), ("udp", udp)):
        for port in ports:
            try:
                sock = _bind(proto, port, family, address)
            except OSError as e:
                failed[f"{proto}/{port}"] = e.strerror or str(e)
                continue
            sel.register(sock, selectors.EVENT_READ, (proto, port, "listen"))
            bound[proto].append(port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    _emit({"ready": True, "name": name, "pid": os.getpid(), "bound": bound, "failed": failed})
    end = time.monotonic() + max_seconds
    while not stop.is_set() and time.monotonic() < end:
        _round(sel, name, 0.2)
    # What already arrived is still told: a busy listener may be behind its sockets.
    drain_until = time.monotonic() + 1.0
    while _round(sel, name, 0.0) and time.monotonic() < drain_until:
        pass
    _emit({"stopped": True, "name": name})
    return 0


def _round(sel: selectors.BaseSelector, name: str, wait: float) -> int:
    """Serve what is ready within ``wait`` seconds; how many sockets were."""
    events = sel.select(timeout=wait)
    for key, _ in events:
        proto, port, role = key.data
        try:
            _serve(sel, key.fileobj, proto, port, role, name)  # type: ignore[arg-type]
        except OSError:
            continue  # a peer that went away; the others go on
    return len(events)


def _serve(
    sel: selectors.BaseSelector, sock: socket.socket, proto: str, port: int, role: str, name: str
) -> None:
    if proto == "udp":
        data, peer = sock.recvfrom(_MAX)
        nonce = _nonce(data)
        _emit({"seen": {"proto": "udp", "port": port, "peer": _peer(peer), "nonce": nonce}})
        if nonce is not None:
            sock.sendto(ECHO + f"{nonce} {name}\n".encode(), peer)
        return
    if role == "listen":
        conn, peer = sock.accept()
        conn.setblocking(False)
        sel.register(conn, selectors.EVENT_READ, ("tcp", port, _peer(peer)))
        return
    sel.unregister(sock)  # a connection: one probe line, one echo, closed
    try:
        data = sock.recv(_MAX)
        nonce = _nonce(data)
        _emit({"seen": {"proto": "tcp", "port": port, "peer": role, "nonce": nonce}})
        if nonce is not None:
            sock.sendall(ECHO + f"{nonce} {name}\n".encode())
    finally:
        sock.close()


def _peer(addr: tuple[object, ...]) -> str:
    host = str(addr[0])
    return host[7:] if host.startswith("::ffff:") else host  # an IPv4 peer on a dual socket


def _v6_works() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            s.bind(("::", 0))
        return True
    except OSError:  # IPv6 disabled in this namespace: IPv4 only
        return False


# --- the prober --------------------------------------------------------------------------
def probe_one(proto: str, addr: str, port: int, nonce: str, timeout: float) -> dict[str, object]:
    """One probe: its ``outcome`` (open, no-echo, refused, unreachable, silent, error),
    who echoed it (the listener's name), and how long it took in milliseconds."""
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    started = time.monotonic()
    deadline = started + timeout
    outcome, detail, echo = "error", "", ""
    try:
        if proto == "tcp":
            with _connect(family, addr, port, deadline) as sock:
                outcome, detail, echo = _tcp(sock, nonce, deadline)
        else:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                outcome, detail, echo = _udp(sock, addr, port, nonce, deadline)
    except OSError as e:
        outcome, detail = _classify(e)
    ms = round((time.monotonic() - started) * 1000, 1)
    return {"outcome": outcome, "detail": detail, "echo_from": echo, "ms": ms}


def _connect(family: int, addr: str, port: int, deadline: float) -> socket.socket:
    """A TCP connection, a new SYN every third of the time left until one answers.

    The kernel's own SYN retry comes after a second, past a probe's time limit; and a
    burst of probes to a neighbour not yet resolved loses all but the first few packets
    (the ARP queue holds ``unres_qlen`` of them): without the retries, those would read
    as a firewall's silence. The first answer wins: connected, refused or unreachable.
    """
    interval = max(deadline - time.monotonic(), 0.0) / _TRIES
    pending: dict[int, socket.socket] = {}
    poll = select.poll()  # not select(): a prober's sockets may number past FD_SETSIZE
    next_try = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError(f"no answer to {len(pending)} SYNs")
            if len(pending) < _TRIES and now >= next_try:
                sock = socket.socket(family, socket.SOCK_STREAM)
                sock.setblocking(False)
                pending[sock.fileno()] = sock
                poll.register(sock, select.POLLOUT)
                sock.connect_ex((addr, port))  # EINPROGRESS: its answer makes it writable
                next_try = now + interval
            until = next_try if len(pending) < _TRIES else deadline
            wait_ms = max(min(until, deadline) - now, 0.0) * 1000
            for fd, _ in poll.poll(wait_ms):
                sock = pending[fd]
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    raise OSError(err, os.strerror(err))
                del pending[fd]
                sock.setblocking(True)
                return sock
    finally:
        for sock in pending.values():
            sock.close()


def _tcp(sock: socket.socket, nonce: str, deadline: float) -> tuple[str, str, str]:
    try:
        sock.settimeout(max(deadline - time.monotonic(), 0.05))
        sock.sendall(PROBE + nonce.encode() + b"\n")
        reply = sock.recv(_MAX)
    except OSError as e:
        return "no-echo", f"connected, then {_classify(e)[1]}", ""
    return _echoed(reply, nonce, "connected")


def _udp(
    sock: socket.socket, addr: str, port: int, nonce: str, deadline: float
) -> tuple[str, str, str]:
    sock.connect((addr, port))  # a connected UDP socket reports ICMP errors on recv
    interval = max(deadline - time.monotonic(), 0.0) / _TRIES
    tries, next_send = 0, time.monotonic()
    while True:
        now = time.monotonic()
        if now >= deadline:
            return "silent", f"no echo to {tries} datagrams", ""
        if tries < _TRIES and now >= next_send:
            sock.send(PROBE + nonce.encode() + b"\n")
            tries, next_send = tries + 1, now + interval
        until = next_send if tries < _TRIES else deadline
        sock.settimeout(max(min(until, deadline) - now, 0.01))
        try:
            reply = sock.recv(_MAX)
        except TimeoutError:
            continue
        outcome, detail, echo = _echoed(reply, nonce, "a datagram")
        if outcome == "open":
            return outcome, detail, echo


def _echoed(reply: bytes, nonce: str, what: str) -> tuple[str, str, str]:
    parts = reply.decode("ascii", "replace").split()
    if reply.startswith(ECHO) and len(parts) >= 3 and parts[1] == nonce:
        return "open", "echoed", parts[2]
    return "no-echo", f"{what} answered, but not with this probe's echo", ""


def _classify(e: OSError) -> tuple[str, str]:
    if isinstance(e, TimeoutError):
        return "silent", "timed out"
    if e.errno == errno.ECONNREFUSED:
        return "refused", "refused (a TCP reset or ICMP port unreachable)"
    if e.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EACCES, errno.EPERM):
        return "unreachable", e.strerror or str(e)
    return "error", e.strerror or str(e)


def probe(name: str, specs: Sequence[str], timeout: float) -> int:
    """Run every probe at once, one thread each; print one JSON document."""
    results: dict[str, dict[str, object]] = {}
    threads = []
    for spec in specs:
        pid, proto, addr, port = spec.split(",")

        def one(pid: str = pid, proto: str = proto, addr: str = addr, port: str = port) -> None:
            results[pid] = probe_one(proto, addr, int(port), pid, timeout)

        t = threading.Thread(target=one, daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout + 2.0)
    _emit({"source": name, "results": results})
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (module docstring)."""
    p = argparse.ArgumentParser(prog="python -m dolmen.net.agent")
    sub = p.add_subparsers(dest="mode", required=True)
    li = sub.add_parser("listen")
    li.add_argument("--name", required=True)
    li.add_argument("--tcp", default="")
    li.add_argument("--udp", default="")
    li.add_argument("--max-seconds", type=float, default=300.0)
    li.add_argument("--bind", default="", help="this address only (default: all)")
    pr = sub.add_parser("probe")
    pr.add_argument("--name", required=True)
    pr.add_argument("--timeout", type=float, default=1.0)
    pr.add_argument("--probe", action="append", default=[])
    args = p.parse_args(argv)
    if args.mode == "listen":
        return listen(args.name, _ports(args.tcp), _ports(args.udp), args.max_seconds, args.bind)
    return probe(args.name, args.probe, args.timeout)


def _ports(text: str) -> list[int]:
    return [int(p) for p in text.split(",") if p]


if __name__ == "__main__":
    sys.exit(main())
