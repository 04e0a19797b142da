"""A small DDP training loop for the agent's tests, every knob on the command line; it has no
ddpbisect code unless asked to use the helper (--helper-*)."""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset


class Numbers(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return torch.full((8,), i / self.n), torch.tensor([float(i % 7)]), i


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=64)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--sampler", choices=["dist", "loader"], default="dist")
    p.add_argument("--shuffle", type=int, default=1)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--context", default=None)
    p.add_argument("--subset", default=None, help="lo-hi: train on Subset(data, range(lo, hi + 1))")
    p.add_argument("--no-dist", action="store_true")
    p.add_argument("--helper-heartbeat", action="store_true")
    p.add_argument("--helper-samples", action="store_true")
    p.add_argument("--optimizers", type=int, default=1)
    args = p.parse_args()

    distributed = not args.no_dist
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    data = Numbers(args.samples)
    if args.subset:
        lo, hi = map(int, args.subset.split("-"))
        data = Subset(data, range(lo, hi + 1))
    if args.helper_samples:
        import ddpbisect
        data = Subset(data, ddpbisect.samples(default=range(len(data))))
    if args.sampler == "dist":
        train_loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers,
                                  multiprocessing_context=args.context if args.workers else None,
                                  sampler=DistributedSampler(data, shuffle=bool(args.shuffle)))
    else:
        train_loader = DataLoader(data, batch_size=args.batch, shuffle=bool(args.shuffle),
                                  num_workers=args.workers,
                                  multiprocessing_context=args.context if args.workers else None)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    optimizers = [torch.optim.SGD(model.parameters(), lr=0.01) for _ in range(args.optimizers)]
    step = 0
    print("LEN rank=%d batches=%d" % (rank, len(train_loader)), flush=True)
    for epoch in range(args.epochs):
        if args.sampler == "dist":
            train_loader.sampler.set_epoch(epoch)
        for x, y, idx in train_loader:
            print("BATCH rank=%d epoch=%d step=%d idx=%s pid=%d" % (
                rank, epoch, step, ",".join(str(int(i)) for i in idx), os.getpid()), flush=True)
            for opt in optimizers:
                opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            for opt in optimizers:
                opt.step()
            if args.helper_heartbeat:
                import ddpbisect
                ddpbisect.heartbeat(step, loss=loss.item())
            step += 1
    if distributed:
        dist.barrier()
    print("DONE rank=%d steps=%d" % (rank, step), flush=True)


if __name__ == "__main__":
    main()
