"""A small DDP training script driven by ddpbisect's command contract (configs/examples).

Run one rank per process with the torchrun environment (RANK, WORLD_SIZE, MASTER_ADDR, ...).
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def parse_ranges(text):
    out = []
    for item in filter(None, text.split(",")):
        a, _, b = item.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samples", default="0-255")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--components", default="")
    p.add_argument("--features", default="")
    a = p.parse_args()
    components = set(filter(None, a.components.split(",")))
    features = set(filter(None, a.features.split(",")))

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    layers = [nn.Linear(8, 16), nn.ReLU()]
    if "dropout" in components:
        layers.append(nn.Dropout(0.1))
    layers.append(nn.Linear(16, 1))
    model = nn.parallel.DistributedDataParallel(nn.Sequential(*layers))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    indices = parse_ranges(a.samples)[rank::world]
    g = torch.Generator().manual_seed(1)
    data = torch.randn(max(indices, default=0) + 1, 8, generator=g)
    for step in range(a.steps):
        batch = [indices[(step * a.batch_size + i) % len(indices)] for i in range(a.batch_size)]
        x = data[batch]
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        if "clip" in features:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
