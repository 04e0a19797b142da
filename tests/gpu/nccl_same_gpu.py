"""GPU check: two NCCL ranks on the one GPU of the machine. NCCL refuses a communicator whose
ranks share a device ("Duplicate GPU detected"), at the first collective."""
import os

import torch
import torch.distributed as dist

torch.cuda.set_device(0)  # every rank on device 0: the planted mistake
dist.init_process_group("nccl")
t = torch.ones(4, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
print(f"rank {os.environ['RANK']}: {t.tolist()}", flush=True)
dist.destroy_process_group()
