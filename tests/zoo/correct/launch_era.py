"""A launch-era script (correct): its rank comes from --local_rank on the command line, as
python -m torch.distributed.launch passes it."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--local_rank", "--local-rank", type=int, default=0)
args = p.parse_args()
dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(30):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"local rank {args.local_rank}: done", flush=True)
dist.destroy_process_group()
