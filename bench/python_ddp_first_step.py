"""The Python baseline for bench/worker_startup.sh: a DDP script equivalent to the worker's
default model (embedding, linear, head over 16 features) that prints a marker after step 0."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

torch.set_num_threads(1)
dist.init_process_group("gloo")
torch.manual_seed(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(32, 32)
        self.linear = nn.Linear(32, 32)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        tokens = ((x + 2.0) * 8).floor().clamp(0, 31).long()
        h = torch.tanh(self.linear(self.embedding(tokens)))
        return self.head(h.mean(1))


model = nn.parallel.DistributedDataParallel(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(16, 16), torch.randn(16)
loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
opt.zero_grad()
loss.backward()
opt.step()
print("FIRST_STEP_DONE", flush=True)
dist.destroy_process_group()
