"""A real multi-process training loop for the Slurm tests: all-reduce across ranks, checkpoints.

Run by every rank through ``dolmen.jobs.launch`` (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT, DOLMEN_CHECKPOINT_DIR set). Each step every rank contributes
``(rank + 1) * (step + 1)``; the sum over ranks is added to the running total,
so after STEPS steps on W ranks the total is ``STEPS(STEPS+1)/2 * W(W+1)/2``
whatever restarts happened in between. The all-reduce is torch.distributed's
gloo backend when torch is installed, else a small TCP all-reduce (rank 0 sums).
Rank 0 saves ``{"step", "total"}`` through dolmen.jobs.checkpoint every step and
prints ``resumed from step K`` and ``done total=T``.

A rank that ends normally destroys its process group first, as PyTorch asks: one
left alive at interpreter exit can abort the rank ("terminate called without an
active exception", gloo's worker threads), now and then, more often on a loaded
machine; srun's --kill-on-bad-exit then kills the other ranks and the job ends
FAILED after its last step (docs/slurm.md, "Checkpoint convention").

Environment: STEPS (default 30), STEP_S (seconds per step, default 0.5),
TRAIN_ALLREDUCE=tcp forces the TCP all-reduce.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable

from dolmen.jobs import checkpoint


class TcpAllReduce:
    """Sum one float across ranks: everybody sends to rank 0, rank 0 sends the sum back."""

    def __init__(self, rank: int, world: int, addr: str, port: int) -> None:
        self.rank, self.world = rank, world
        self.peers: list[socket.socket] = []
        if rank == 0:
            srv = socket.create_server(("0.0.0.0", port), reuse_port=False, backlog=world)
            srv.settimeout(120)
            while len(self.peers) < world - 1:
                conn, _ = srv.accept()
                conn.settimeout(None)
                self.peers.append(conn)
            srv.close()
        else:
            deadline = time.monotonic() + 120
            while True:
                try:
                    self.sock = socket.create_connection((addr, port), timeout=5)
                    self.sock.settimeout(None)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)

    def __call__(self, value: float) -> float:
        if self.rank == 0:
            total = value + sum(_recv(p) for p in self.peers)
            for p in self.peers:
                p.sendall(struct.pack("!d", total))
            return total
        self.sock.sendall(struct.pack("!d", value))
        return _recv(self.sock)


def _recv(sock: socket.socket) -> float:
    data = b""
    while len(data) < 8:
        chunk = sock.recv(8 - len(data))
        if not chunk:
            raise ConnectionError("a peer rank went away")
        data += chunk
    return float(struct.unpack("!d", data)[0])


Reduce = Callable[[float], float]


def torch_allreduce() -> tuple[Reduce, Callable[[], None]] | None:
    """gloo all-reduce through torch.distributed and the call that ends it, or None
    without torch."""
    if os.environ.get("TRAIN_ALLREDUCE") == "tcp":
        return None
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return None
    dist.init_process_group("gloo", init_method="env://")

    def reduce(value: float) -> float:
        t = torch.tensor([value], dtype=torch.float64)
        dist.all_reduce(t)
        return float(t.item())

    return reduce, dist.destroy_process_group


def main() -> int:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    steps = int(os.environ.get("STEPS", "30"))
    step_s = float(os.environ.get("STEP_S", "0.5"))
    ckdir = os.environ["DOLMEN_CHECKPOINT_DIR"]
    stop = {"now": False}

    def on_signal(signum: int, frame: object) -> None:
        stop["now"] = True  # USR2: the time limit is near; TERM: requeued or cancelled

    signal.signal(signal.SIGUSR2, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    last = checkpoint.latest(ckdir)
    start, total = 0, 0.0
    if last is not None:
        state = json.loads(last.read())
        start, total = state["step"] + 1, state["total"]
    if rank == 0:
        print(
            f"resumed from step {start - 1 if last else 'none'} restart="
            f"{os.environ.get('DOLMEN_RESTART_COUNT')} host={socket.gethostname()} world={world}",
            flush=True,
        )
    torch_pg = torch_allreduce()
    reduce: Reduce = (
        torch_pg[0]
        if torch_pg
        else TcpAllReduce(rank, world, os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    )
    for step in range(start, steps):
        if stop["now"]:
            break
        time.sleep(step_s)
        try:
            total += reduce(float((rank + 1) * (step + 1)))
        except (ConnectionError, RuntimeError) as e:  # gloo raises RuntimeError
            # No destroy_process_group here: the group is broken and the rank fails anyway.
            print(f"rank {rank}: all-reduce failed at step {step}: {e}", flush=True)
            return 1
        if rank == 0:
            payload = json.dumps({"step": step, "total": total}).encode()
            checkpoint.save(ckdir, step, payload, keep=3)
            print(f"step {step} total={total:g}", flush=True)
    else:
        if rank == 0:
            print(f"done total={total:g}", flush=True)
    if torch_pg is not None:
        torch_pg[1]()  # destroy_process_group
    return 0


if __name__ == "__main__":
    sys.exit(main())
