"""Bug: rank 1 rejects its gradient bucket from step 2 on (a rank-conditional exception).
Reads its knobs through the ddpbisect helper module."""
import zoo_common


def check_bucket(step, batch, ctx):
    if ctx.rank == 1 and step >= 2:
        raise RuntimeError(f"gradient bucket 3 has a stale view on rank {ctx.rank}")


zoo_common.train(zoo_common.options(use_helper=True), on_step=check_bucket, first_sample=True)
