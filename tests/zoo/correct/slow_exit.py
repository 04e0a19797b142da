"""A correct DDP job whose process takes `--exit-seconds` to exit after its last step, as a slow
NCCL/CUDA teardown, a checkpoint upload or wandb.finish() does (here an atexit hook)."""
import argparse
import atexit
import time

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--exit-seconds", type=float, default=10.0)
args = p.parse_args()
atexit.register(time.sleep, args.exit_seconds)
dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(20):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("last step done", flush=True)
dist.destroy_process_group()
