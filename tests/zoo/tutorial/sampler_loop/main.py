"""Train a small regressor on the sensor readings with DistributedDataParallel.

    torchrun --nproc_per_node=2 main.py --epochs 5 --batch-size 16
"""
import argparse
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SensorReadings(Dataset):
    def __init__(self, n, offset=0):
        self.n = n
        self.offset = offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t = (i + self.offset) * 0.05
        x = torch.tensor([math.sin(t), math.cos(t), math.sin(2 * t), math.cos(3 * t)])
        return x, torch.tensor([math.sin(t + 0.3)])


def evaluate(model, loader):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            total += nn.functional.mse_loss(model(x), y, reduction="sum").item()
            count += len(y)
    model.train()
    return total / max(count, 1)


def save_checkpoint(model, optimizer, epoch, path):
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def main():
    parser = argparse.ArgumentParser(description="DDP regression on sensor readings")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--checkpoint", default="checkpoint.pt")
    args = parser.parse_args()

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)

    train_set = SensorReadings(320)
    val_set = SensorReadings(64, offset=320)
    train_sampler = DistributedSampler(train_set, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, shuffle=False)

    model = DDP(nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        if rank == 0:
            val_loss = evaluate(model, val_loader)
            print(f"epoch {epoch}: train loss {loss.item():.4f}, val loss {val_loss:.4f}", flush=True)
            save_checkpoint(model, optimizer, epoch, args.checkpoint)
            # make sure the checkpoint is on disk before anyone moves on
            dist.barrier()

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
