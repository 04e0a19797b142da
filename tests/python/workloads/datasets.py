"""Which data set is the training one: train/val loaders (minGPT style), evaluation before training,
two loaders nothing tells apart, an iterable data set. Prints the indices each loader yielded."""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler, IterableDataset


class Numbers(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((4,), float(i)), i


class Stream(IterableDataset):
    def __iter__(self):
        return iter((torch.full((4,), float(i)), i) for i in range(20))


def seen(name, loader):
    indices = sorted(int(i) for _, batch in loader for i in batch)
    print("IDX %s rank=%d: %s" % (name, dist.get_rank(), ",".join(map(str, indices))), flush=True)


def one_step():
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2, 4)).sum().backward()
    opt.step()


def main():
    dist.init_process_group("gloo")
    case = sys.argv[1]
    if case == "trainval":
        train_set, val_set = Numbers(40), Numbers(30)
        train_loader = DataLoader(train_set, batch_size=4, sampler=DistributedSampler(train_set))
        val_loader = DataLoader(val_set, batch_size=4, sampler=DistributedSampler(val_set))
        seen("train", train_loader)
        one_step()
        seen("val", val_loader)
    elif case == "valfirst":
        val_loader = DataLoader(Numbers(30), batch_size=4)
        seen("val", val_loader)
        train_loader = DataLoader(Numbers(40), batch_size=4, shuffle=True)
        seen("train", train_loader)
        one_step()
    elif case == "ambiguous":
        loader_a = DataLoader(Numbers(40), batch_size=4, shuffle=True)
        loader_b = DataLoader(Numbers(30), batch_size=4, shuffle=True)  # mark:b
        seen("a", loader_a)
        seen("b", loader_b)
        one_step()
    elif case == "iterable":
        stream = DataLoader(Stream(), batch_size=4)
        seen("stream", stream)
        one_step()


if __name__ == "__main__":
    main()
