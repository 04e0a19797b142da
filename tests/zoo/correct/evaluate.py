"""A correct DDP job with an ordinary evaluation phase: every `--eval-every` steps the model is
evaluated under torch.no_grad() for about `--eval-seconds` of CPU work, with no optimizer step
and nothing printed until it ends. No ddpbisect code."""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--eval-every", type=int, default=10)
p.add_argument("--eval-seconds", type=float, default=8.0)
args = p.parse_args()
dist.init_process_group("gloo")
torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 16), torch.randn(256, 1))
train_loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def evaluate():
    a = torch.randn(300, 300)
    start = time.time()
    with torch.no_grad():
        while time.time() - start < args.eval_seconds:
            a = torch.tanh(a @ a)
    return a.mean().item()


step = 0
for epoch in range(args.epochs):
    train_loader.sampler.set_epoch(epoch)
    for x, y in train_loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % args.eval_every == 0:
            evaluate()
print(f"rank {dist.get_rank()}: done after {step} steps", flush=True)
dist.destroy_process_group()
