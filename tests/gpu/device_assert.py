"""GPU check: an out-of-range class index into nll_loss on the GPU from step N on: a device-side
assert, reported asynchronously at a later line unless CUDA_LAUNCH_BLOCKING=1.
usage: device_assert.py STEPS BAD_STEP"""
import sys

import torch
import torch.nn.functional as F

steps, bad_step = int(sys.argv[1]), int(sys.argv[2])
model = torch.nn.Linear(32, 10).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(steps):
    x = torch.randn(16, 32, device="cuda")
    target = torch.randint(0, 10, (16,), device="cuda")
    if step >= bad_step:
        target[3] = 10  # one class past the last: the kernel asserts
    loss = F.nll_loss(F.log_softmax(model(x), dim=1), target)  # gpu-check: the culprit line
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
