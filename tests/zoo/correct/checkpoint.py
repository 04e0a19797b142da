"""A correct DDP job that saves a large checkpoint between steps: rank 0 writes `--mb` MB every
`--every` steps while the other ranks wait for it at a barrier (nothing printed meanwhile)."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--every", type=int, default=4)
p.add_argument("--mb", type=int, default=400)
args = p.parse_args()
dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
state = {"weights": model.module.state_dict(), "cache": torch.randn(args.mb * 1024 * 1024 // 4)}
for step in range(args.steps):
    loss = model(torch.randn(8, 64)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if (step + 1) % args.every == 0:
        if dist.get_rank() == 0:
            for copy in range(3):  # keep the last three, as trainers do
                torch.save(state, f"checkpoint-{copy}.pt")
                os.sync()
        dist.barrier()
print("done", flush=True)
dist.destroy_process_group()
