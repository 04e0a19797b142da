"""A correct DDP job whose imports take about `SLOW_IMPORT_SECONDS` (20 s): half waiting on a
slow mount, half building a lookup table, before the process group exists."""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

seconds = float(os.environ.get("SLOW_IMPORT_SECONDS", "20"))
time.sleep(seconds / 2)  # the site-packages mount
start = time.time()
table = {}
while time.time() - start < seconds / 2:  # a tokenizer's vocabulary, built at import
    table[len(table) % 100000] = str(len(table))
dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(20):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
