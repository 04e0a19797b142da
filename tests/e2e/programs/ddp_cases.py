"""Real DDP failures over Gloo for the live diagnosis tests. usage: ddp_cases.py MODE

missing_file: rank 1 opens a shard that exists on no node; rank 0 only sees its peer vanish.
unused: a DDP model with a branch that never contributes to the loss (find_unused_parameters off).
"""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 4)
        self.unused = nn.Linear(4, 4)

    def forward(self, x, mode):
        if mode == "unused":
            return self.used(x)
        return self.unused(self.used(x))


def load_shard(rank):
    with open(f"/nonexistent/ddpbisect-shards/shard-{rank}.bin", "rb") as f:
        return f.read()


def main():
    mode = sys.argv[1]
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = nn.parallel.DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        if mode == "missing_file" and rank == 1 and step == 2:
            load_shard(rank)
        loss = model(torch.randn(8, 4), mode).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
