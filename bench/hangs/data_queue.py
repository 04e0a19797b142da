"""A real hang: on rank 1 a DataLoader worker blocks forever fetching sample 5 (a lock its parent
held at fork); rank 1 waits on its data queue while rank 0 waits in DDP's all-reduce."""
import threading

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Records(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        if dist.get_rank() == 1 and i == 5:
            threading.Event().wait()
        return torch.full((8,), float(i)), torch.tensor([1.0])


dist.init_process_group("gloo")
data = Records()
loader = DataLoader(data, batch_size=4, num_workers=1, sampler=DistributedSampler(data, shuffle=False))
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in loader:
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
