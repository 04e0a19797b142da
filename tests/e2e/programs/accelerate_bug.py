"""Issue 26: the seed case's bug in a Hugging Face Accelerate script (run by `accelerate launch`):
the rank is the Accelerator's process index, DDP over Gloo on the CPU, and process 1 hits a
NameError at the start of its second epoch (a variable only process 0's branch ever defines)."""
import argparse

import torch
import torch.nn as nn
from accelerate import Accelerator

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
args = p.parse_args()
accelerator = Accelerator(cpu=True)
rank = accelerator.process_index
torch.manual_seed(0)
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model, opt = accelerator.prepare(model, opt)
for epoch in range(args.epochs):
    if epoch == 0 and rank == 0:
        best_loss = float("inf")
    if epoch >= 1:
        best_loss = min(best_loss, 1.0)  # noqa: F821 -- process 1 never defined it
    for step in range(4):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()
    print(f"local rank {accelerator.local_process_index}: epoch {epoch} done", flush=True)
accelerator.end_training()
