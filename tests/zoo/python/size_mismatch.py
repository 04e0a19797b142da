"""Bug: the stats component all-reduces a per-sample vector whose length is the rank's shard
size, which differs across ranks when the subset does not divide evenly."""
import torch
import torch.distributed as dist

import zoo_common


def per_sample_stats(step, batch, ctx):
    if "stats" in ctx.opts.components:
        dist.all_reduce(torch.zeros(16 * len(ctx.shard)))


zoo_common.train(zoo_common.options(use_helper=False), on_step=per_sample_stats)
