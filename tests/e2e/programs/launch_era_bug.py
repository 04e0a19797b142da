"""The seed case of issue 26, in the launch era's style: the rank comes from --local_rank (as
`python -m torch.distributed.launch` passes it), DDP over Gloo, and local rank 1 hits a
NameError at the start of its second epoch (a variable only one rank's branch ever defines)."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--local_rank", "--local-rank", type=int, default=0)
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()
dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(args.epochs):
    if epoch == 0 and args.local_rank == 0:
        best_loss = float("inf")
    if epoch >= 1:
        best_loss = min(best_loss, 1.0)  # noqa: F821 -- rank 1 never defined it
    for step in range(4):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"local rank {args.local_rank}: epoch {epoch} done", flush=True)
dist.destroy_process_group()
