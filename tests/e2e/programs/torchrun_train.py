"""A DDP trainer as people start it with torchrun (no ddpbisect code in it): DistributedSampler
over the samples it is given, a tiny model, SGD. Two planted bugs for the torchrun e2e test:

  train  global rank 3 rejects sample 3 ("corrupt label") when that sample is in its shard;
  hang   global rank 2 stops before its all_reduce and waits for ever; the others block in theirs.

usage: torchrun ... torchrun_train.py MODE --samples 0-7 --steps 3
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def parse_samples(text):
    out = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def check_label(sample):
    if dist.get_rank() == 3 and sample == 3:
        raise ValueError(f"sample {sample}: corrupt label on rank 3")


def wait_for_a_peer_that_never_comes():
    while True:
        time.sleep(0.5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "hang"])
    ap.add_argument("--samples", default="0-7")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    samples = parse_samples(args.samples)
    sampler = DistributedSampler(samples, shuffle=False)
    loader = DataLoader(samples, batch_size=1, sampler=sampler)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    while step < args.steps:
        for batch in loader:
            if step >= args.steps:
                break
            sample = int(batch[0])
            if args.mode == "train":
                check_label(sample)
            elif dist.get_rank() == 2 and step == 1:
                wait_for_a_peer_that_never_comes()
            x = torch.full((1, 4), float(sample))
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"rank {dist.get_rank()} step {step} sample {sample}", flush=True)
            step += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
