"""GPU check: a Python command workload on one CUDA device whose rank 0 asks for far more memory
than any GPU has from step N on (a planted CUDA OOM). usage: cuda_oom.py STEPS OOM_STEP"""
import sys

import torch

steps, oom_step = int(sys.argv[1]), int(sys.argv[2])
model = torch.nn.Linear(256, 256).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(steps):
    x = torch.randn(64, 256, device="cuda")
    if step >= oom_step:
        x = x.repeat(1 << 30, 1)  # 2^36 x 256 floats: 64 TiB
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
