"""A DDP job whose data location is host configuration: each host sets DATA_ROOT, and one host's
points nowhere. Prints its network namespace so tests can tell which host a rank ran on."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn

import ddpbisect


def main():
    print("netns", os.readlink("/proc/self/ns/net"), flush=True)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    samples = ddpbisect.samples(range(16))[rank::dist.get_world_size()]
    for step in range(ddpbisect.param("steps", 4)):
        if step == 0 and samples:
            with open(os.path.join(os.environ.get("DATA_ROOT", "/"), "index.txt")) as f:
                f.read()
        loss = model(torch.ones(len(samples) or 1, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        ddpbisect.heartbeat(step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
