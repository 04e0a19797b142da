"""A training script with two unrelated bugs, for --from-logs: the single-process fast path of the
fused loss (feature fused_loss, world size 1) stacks unequal shapes, and rank 1 loses its shard
lease from step 2 on. The user's 2-rank job failed with the second; a reduction that chases the
first failure it meets (on one rank) finds the first. With FUSED_EVERYWHERE=1 the fused loss fails
on every world size, masking the lease bug wherever fused_loss is on."""
import os

import torch
import torch.nn.functional as F

import zoo_common


def fused(out, y, ctx):
    everywhere = os.environ.get("FUSED_EVERYWHERE") == "1"
    if "fused_loss" in ctx.opts.features and (ctx.world == 1 or everywhere):
        return torch.stack([out, y.squeeze(-1)]).std()
    return F.mse_loss(out, y)


def renew_lease(step, batch, ctx):
    if ctx.rank == 1 and step >= 2:
        raise RuntimeError(f"rank {ctx.rank} lost its shard lease at step {step}")


zoo_common.train(zoo_common.options(use_helper=True), on_step=renew_lease, loss_fn=fused)
