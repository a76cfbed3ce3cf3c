"""A test peer run inside a network namespace (``ip netns exec NS python netns_peer.py``).

    serve PORT...            accept TCP and echo UDP on each port until killed
    probe JSON               [[src, dst, port, "tcp"|"udp"], ...] -> one word each:
                             open (connected / echoed), refused (RST / ICMP), dropped

Every probe runs at once, non-blocking, within one deadline: a dropped SYN costs the
deadline once, not once per probe.
"""

from __future__ import annotations

import json
import selectors
import socket
import sys
import time

DEADLINE = 0.6


def serve(ports: list[int]) -> None:
    sel = selectors.DefaultSelector()
    for port in ports:
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_INET, kind)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("0.0.0.0", port))
            if kind == socket.SOCK_STREAM:
                s.listen(64)
            sel.register(s, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            assert isinstance(s, socket.socket)
            if s.type == socket.SOCK_STREAM:
                conn, _ = s.accept()
                conn.close()
            else:
                data, addr = s.recvfrom(64)
                s.sendto(data, addr)


def probe(items: list[list[object]]) -> list[str]:
    out = ["dropped"] * len(items)
    pending: dict[socket.socket, int] = {}
    for i, (src, dst, port, proto) in enumerate(items):
        kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
        s = socket.socket(socket.AF_INET, kind)
        s.bind((str(src), 0))
        s.setblocking(False)
        if kind == socket.SOCK_STREAM:
            s.connect_ex((str(dst), int(str(port))))
        else:
            s.connect((str(dst), int(str(port))))
            s.send(b"x")
        pending[s] = i
    end = time.monotonic() + DEADLINE
    while pending and time.monotonic() < end:
        sel = selectors.DefaultSelector()
        for s in pending:
            sel.register(
                s, selectors.EVENT_WRITE if s.type == socket.SOCK_STREAM else selectors.EVENT_READ
            )
        for key, _ in sel.select(max(0.0, end - time.monotonic())):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            i = pending.pop(s)
            if s.type == socket.SOCK_STREAM:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                out[i] = "open" if err == 0 else "refused"
            else:
                try:
                    s.recv(64)
                    out[i] = "open"
                except OSError:
                    out[i] = "refused"
            s.close()
        sel.close()
    for s in pending:
        s.close()
    return out


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve([int(p) for p in sys.argv[2:]])
    else:
        print(json.dumps(probe(json.loads(sys.argv[2]))))
