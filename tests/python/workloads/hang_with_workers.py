"""A rank with two DataLoader worker processes alive (persistent workers) hangs in all_reduce on
rank 0; rank 1 sleeps."""
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.tensor([float(i * i)])


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Squares(), batch_size=4, num_workers=2, persistent_workers=True)
    batches = iter(loader)
    first = next(batches)
    print("READY rank=%d" % dist.get_rank(), flush=True)
    if dist.get_rank() == 0:
        dist.all_reduce(first)  # trace:hang
    time.sleep(120)


if __name__ == "__main__":
    main()
