"""A training loop with no torch in it, for the tests that reduce many times (crash and resume
at 20 instants): each rank starts in milliseconds. Its planted bug reaches every dimension the
reducer cuts: rank 1 of two or more, sample 37 in the data, the `dropout` component, the
`fused_loss` feature, step 2 and a batch of three or more."""
import os
import sys

import ddpbisect

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
samples = ddpbisect.samples(range(64))
components = ddpbisect.components(["norm", "dropout", "stats", "aux_head", "head"])
features = ddpbisect.features(["grad_clip", "fused_loss", "log_metrics"])
steps, batch_size = ddpbisect.param("steps", 8), ddpbisect.param("batch_size", 8)
mine = list(samples)[rank::world] or [0]


def fused_loss(step, batch):
    if world >= 2 and rank == 1 and 37 in samples and "dropout" in components and step >= 2:
        if len(batch) >= 3:
            raise RuntimeError(f"fused loss: shapes differ at step {step}")
    return sum(batch)


for step in range(steps):
    batch = [mine[(step * batch_size + i) % len(mine)] for i in range(batch_size)]
    loss = fused_loss(step, batch) if "fused_loss" in features else sum(batch)
    ddpbisect.heartbeat(step, loss=float(loss))
print(f"rank {rank}: finished {steps} steps", file=sys.stderr)
