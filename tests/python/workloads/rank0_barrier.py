"""The classic: a barrier inside the rank-0 checkpoint branch. Rank 0 waits in barrier, rank 1 in
DDP's gradient all-reduce of the next step."""
import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    dist.init_process_group("gloo")
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for step in range(2):
            opt.zero_grad()
            loss = model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()  # trace:backward
            opt.step()
        if dist.get_rank() == 0:
            save_checkpoint(model)
        print("READY epoch=%d" % epoch, flush=True)


def save_checkpoint(model):
    torch.save(model.module.state_dict(), "/dev/null")
    dist.barrier()  # trace:barrier  (bug: only rank 0 gets here)


if __name__ == "__main__":
    main()
