"""Plain DDP trainer for the live fixtures, run under torchrun (2.13 or Debian's 1.13) or by hand
with the environment contract. usage: train_ddp.py CASE [--record] [--fr-dump] [--no-ddp]
CASE: exception | hang | mismatch | unused | sigkill (the bug planted on rank 1).
--record: main decorated with elastic's @record (torchrun then gets an error.json).
--fr-dump: when training raises, write this rank's Flight Recorder buffer (pickle) to
$TORCH_FR_DUMP_TEMP_FILE<rank>, as ProcessGroupNCCL does on a timeout; Gloo records the
buffer in 2.13 but never writes it by itself.
--no-ddp: average gradients by hand instead of DDP (2.13's CPU build segfaults in DDP's
constructor under TORCH_DISTRIBUTED_DEBUG=DETAIL)."""
import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

import data
from model import Net, evaluate, sync_metrics

CASE = sys.argv[1]


def average_gradients(model):
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()


def train():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank = dist.get_rank()
    net = Net(CASE)
    model = net if "--no-ddp" in sys.argv else DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        x, y = data.load_batch(rank, step, CASE)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        if model is net:
            average_gradients(net)
        opt.step()
        metrics = sync_metrics(loss.item(), rank, step, CASE)
        print(f"rank {rank} step {step} loss {loss.item():.4f} mean {metrics[0]:.4f}", flush=True)
    evaluate(rank, CASE)
    dist.barrier()  # everyone done before rank 0 saves
    if rank == 0:
        print("training done", flush=True)
    dist.destroy_process_group()


def main():
    try:
        train()
    except Exception:
        if "--fr-dump" in sys.argv:
            from torch._C._distributed_c10d import _dump_fr_trace

            with open(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + os.environ["RANK"], "wb") as f:
                f.write(_dump_fr_trace())
        raise


if __name__ == "__main__":
    (record(main) if "--record" in sys.argv else main)()
