"""Data-parallel training with PyTorch: gloo all-reduce of the gradients across ranks
(torch.distributed, env:// rendezvous from the rank environment), SGD with momentum, a
checkpoint of model and optimizer after every step through dolmen.jobs.checkpoint,
resumed from the latest complete one.

    python train_torch.py STEPS RESULT_JSON [SLEEP_S]
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from dolmen.jobs import checkpoint  # noqa: E402

DIM = 8


def data(step: int, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(step * 1000 + rank)
    x = torch.randn(32, DIM, generator=g)
    true_w = torch.arange(1, DIM + 1, dtype=torch.float32).unsqueeze(1) / DIM
    return x, x @ true_w + 0.01 * torch.randn(32, 1, generator=g)


def main() -> None:
    steps, result = int(sys.argv[1]), sys.argv[2]
    pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ckdir = os.environ["DOLMEN_CHECKPOINT_DIR"]
    torch.manual_seed(0)
    model = torch.nn.Linear(DIM, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    ck = checkpoint.latest(ckdir)
    if ck is not None:
        state = torch.load(ck.file("state"), weights_only=True)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = int(state["step"])
    restart = os.environ["DOLMEN_RESTART_COUNT"]
    print(f"rank {rank}/{world} restart {restart} resumed from step {start}", flush=True)
    for step in range(start, steps):
        x, y = data(step, rank)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        for p in model.parameters():
            assert p.grad is not None
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        if rank == 0:
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}
            checkpoint.save(ckdir, step + 1, lambda path, s=state: torch.save(s, path), keep=3)
        time.sleep(pause)
    if rank == 0:
        x, y = data(10**6, 0)
        with torch.no_grad():
            loss = torch.nn.functional.mse_loss(model(x), y).item()
        doc = {
            "weight": model.weight.detach().flatten().tolist(),
            "bias": model.bias.detach().tolist(),
            "loss": loss,
            "restart": int(restart),
            "resumed_from": start,
        }
        with open(result, "w") as f:
            json.dump(doc, f)
    dist.destroy_process_group()
    print(f"rank {rank} done at step {steps}", flush=True)


if __name__ == "__main__":
    main()
