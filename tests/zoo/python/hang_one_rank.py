"""Bug: with metric logging on, rank 1 waits from step 1 on for a metrics flush that never comes;
every other rank then blocks in DDP's all-reduce (a hang caused by one rank)."""
import threading

import zoo_common


def log_metrics(step, batch, ctx):
    if "log_metrics" in ctx.opts.features and ctx.rank == 1 and step >= 1:
        threading.Event().wait()  # the flush thread was never started


zoo_common.train(zoo_common.options(use_helper=True), on_step=log_metrics)
