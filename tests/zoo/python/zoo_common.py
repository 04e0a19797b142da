"""What the Python zoo's training scripts share, as a real project's utils module would: argument
parsing (ddpbisect placeholders on the command line, or the ddpbisect helper module), a small data
set, DistributedSampler-style sharding without padding (so a rank can get an empty shard), a model
built from named components, and the process group."""
import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import ddpbisect

ALL_COMPONENTS = ["norm", "dropout", "stats", "aux_head", "head"]


def options(use_helper):
    """The trial's knobs: from argv placeholders, or (use_helper) from DDPBISECT_CONFIG."""
    if use_helper:
        return argparse.Namespace(
            samples=ddpbisect.samples(range(64)), components=ddpbisect.components(ALL_COMPONENTS),
            features=ddpbisect.features([]), steps=ddpbisect.param("steps", 8),
            batch_size=ddpbisect.param("batch_size", 8))
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=ddpbisect.parse_indices, default=list(range(64)))
    p.add_argument("--components", type=lambda s: [c for c in s.split(",") if c], default=ALL_COMPONENTS)
    p.add_argument("--features", type=lambda s: [f for f in s.split(",") if f], default=[])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=8)
    return p.parse_args()


def sample(i):
    x = torch.tensor([math.sin(0.37 * i + j) for j in range(8)])
    return x, torch.tensor([math.cos(0.11 * i)])


def shard(indices, rank, world):
    return list(indices)[rank::world]


class Model(nn.Module):
    def __init__(self, components, use_aux=True):
        super().__init__()
        self.use_aux = use_aux
        self.components = set(components)
        self.backbone = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16) if "norm" in components else None
        self.dropout = nn.Dropout(0.1) if "dropout" in components else None
        self.aux_head = nn.Linear(16, 1) if "aux_head" in components else None
        self.head = nn.Linear(16, 1) if "head" in components else None

    def forward(self, x):
        h = torch.tanh(self.backbone(x))
        if self.norm is not None:
            h = self.norm(h)
        if self.dropout is not None:
            h = self.dropout(h)
        out = self.head(h) if self.head is not None else h.mean(-1, keepdim=True)
        if self.aux_head is not None and self.use_aux:
            out = out + 0.1 * self.aux_head(h)
        return out


def init():
    dist.init_process_group("gloo")
    node = int(os.environ.get("GROUP_RANK", "0"))
    return dist.get_rank(), dist.get_world_size(), node


def batches(my_shard, batch_size, steps):
    """(step, batch indices) for `steps` steps, cycling over the shard."""
    cursor = 0
    for step in range(steps):
        batch = [my_shard[(cursor + i) % len(my_shard)] for i in range(min(batch_size, len(my_shard)))]
        cursor += len(batch)
        yield step, batch


def tensors(batch):
    xs, ys = zip(*(sample(i) for i in batch))
    return torch.stack(xs), torch.stack(ys)


_clean_sample = sample


def train(opts, on_step=None, loss_fn=None, use_aux=True, first_sample=False):
    """The training loop every zoo script runs; the hooks hold each script's bug. ZOO_BUG=off (the
    false-failure bench) runs the same script with its bug switched off: no hook, the model whole,
    every sample clean."""
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    global sample
    if os.environ.get("ZOO_BUG") == "off":
        on_step, loss_fn, use_aux, sample = None, None, True, _clean_sample

    # The bench's waiting variant (bench/python_zoo.py --wait): a job whose ranks mostly wait, on
    # a dataset mount before the first step and on storage for every batch, as real jobs do.
    start_wait, step_wait = (float(w) for w in os.environ.get("ZOO_WAIT", "0,0").split(","))
    time.sleep(start_wait)
    rank, world, node = init()
    my = shard(opts.samples, rank, world)
    if first_sample:
        warm_x, _ = sample(my[0])  # IndexError on an empty shard
    loss_scale = opts.batch_size / len(my)  # ZeroDivisionError on an empty shard
    torch.manual_seed(0)
    model = DDP(Model(opts.components, use_aux=use_aux))
    optim = torch.optim.SGD(model.parameters(), lr=0.01)
    ctx = argparse.Namespace(rank=rank, world=world, node=node, shard=my, opts=opts, model=model)
    for step, batch in batches(my, opts.batch_size, opts.steps):
        time.sleep(step_wait)
        if on_step:
            on_step(step, batch, ctx)
        x, y = tensors(batch)
        out = model(x)
        loss = loss_fn(out, y, ctx) if loss_fn else F.mse_loss(out, y)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss is {loss.item()} at step {step} on rank {rank}")
        optim.zero_grad()
        (loss * min(loss_scale, 1.0)).backward()
        if "grad_clip" in opts.features:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        if "stats" in opts.components:
            dist.all_reduce(torch.tensor([loss.item(), float(len(batch))]))
        ddpbisect.heartbeat(step, loss.item())
    print(f"rank {rank}: finished {opts.steps} steps", flush=True)
    dist.destroy_process_group()
