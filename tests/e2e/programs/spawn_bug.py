"""Issue 26: the seed case's bug in a script that starts its own ranks with
torch.multiprocessing.spawn (the count from --nprocs): DDP over Gloo, and rank 1 hits an
UnboundLocalError (a NameError: in a function) at the start of its second epoch (a variable only
rank 0's branch ever defines)."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def main(rank, world, epochs):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        if epoch == 0 and rank == 0:
            best_loss = float("inf")
        if epoch >= 1:
            best_loss = min(best_loss, 1.0)  # noqa: F821 -- rank 1 never defined it
        for step in range(4):
            loss = model(torch.randn(4, 8)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"local rank {rank}: epoch {epoch} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    args = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29512")
    mp.spawn(main, args=(args.nprocs, args.epochs), nprocs=args.nprocs)
