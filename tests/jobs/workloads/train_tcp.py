"""Data-parallel training in pure Python: linear regression, gradients summed across ranks
over TCP (rank 0 reduces, in rank order, so the result is bitwise reproducible), a checkpoint
after every step through dolmen.jobs.checkpoint, resumed from the latest complete one.

    python train_tcp.py STEPS RESULT_JSON [SLEEP_S]
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
import time

from dolmen.jobs import checkpoint

DIM = 8
BATCH = 16
LR = 0.5
TRUE_W = [0.5 * (i + 1) * (-1) ** i for i in range(DIM)]


def batch(step: int, rank: int) -> tuple[list[list[float]], list[float]]:
    rng = random.Random(step * 1000 + rank)
    xs = [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(BATCH)]
    ys = [sum(w * x for w, x in zip(TRUE_W, row)) + rng.gauss(0, 0.01) for row in xs]
    return xs, ys


def gradient(w: list[float], xs: list[list[float]], ys: list[float]) -> list[float]:
    g = [0.0] * DIM
    for row, y in zip(xs, ys):
        err = sum(wi * xi for wi, xi in zip(w, row)) - y
        for i in range(DIM):
            g[i] += 2 * err * row[i] / len(xs)
    return g


def loss(w: list[float]) -> float:
    xs, ys = batch(10**6, 0)  # a fixed evaluation batch
    return sum((sum(wi * xi for wi, xi in zip(w, r)) - y) ** 2 for r, y in zip(xs, ys)) / len(ys)


class AllReduce:
    """Sum of a vector over every rank; rank 0 is the hub."""

    def __init__(self, rank: int, world: int, addr: str, port: int) -> None:
        self.rank, self.world = rank, world
        if rank == 0:
            server = socket.create_server((addr, port))
            self.peers: dict[int, socket.socket] = {}
            self.files = {}
            while len(self.peers) < world - 1:
                conn, _ = server.accept()
                f = conn.makefile("rb")  # keep it: its buffer may already hold the first vector
                peer = int(f.readline())
                self.peers[peer], self.files[peer] = conn, f
            server.close()
        else:
            deadline = time.monotonic() + 60
            while True:
                try:
                    self.conn = socket.create_connection((addr, port), timeout=60)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            self.conn.sendall(f"{rank}\n".encode())
            self.files = {0: self.conn.makefile("rb")}

    def __call__(self, vec: list[float]) -> list[float]:
        if self.rank == 0:
            parts = {0: vec}
            for r, f in sorted(self.files.items()):
                line = f.readline()
                if not line:
                    raise ConnectionError(f"rank {r} went away")
                parts[r] = json.loads(line)
            total = [sum(parts[r][i] for r in range(self.world)) for i in range(len(vec))]
            msg = (json.dumps(total) + "\n").encode()
            for c in self.peers.values():
                c.sendall(msg)
            return total
        self.conn.sendall((json.dumps(vec) + "\n").encode())
        line = self.files[0].readline()
        if not line:
            raise ConnectionError("rank 0 went away")
        return list(json.loads(line))


def main() -> None:
    steps, result = int(sys.argv[1]), sys.argv[2]
    pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    ckdir = os.environ["DOLMEN_CHECKPOINT_DIR"]
    restart = os.environ["DOLMEN_RESTART_COUNT"]
    w, start = [0.0] * DIM, 0
    ck = checkpoint.latest(ckdir)
    if ck is not None:
        state = json.loads(ck.read())
        w, start = state["w"], state["step"]
    print(f"rank {rank}/{world} restart {restart} resumed from step {start}", flush=True)
    reduce = AllReduce(rank, world, os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    for step in range(start, steps):
        total = reduce(gradient(w, *batch(step, rank)))
        w = [wi - LR * gi / world for wi, gi in zip(w, total)]
        if rank == 0:
            checkpoint.save(
                ckdir, step + 1, json.dumps({"step": step + 1, "w": w}).encode(), keep=3
            )
        time.sleep(pause)
    if rank == 0:
        doc = {"w": w, "loss": loss(w), "restart": int(restart), "resumed_from": start}
        with open(result, "w") as f:
            json.dump(doc, f)
    print(f"rank {rank} done at step {steps}", flush=True)


if __name__ == "__main__":
    main()
