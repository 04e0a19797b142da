"""Bug: with the asynchronous loader on, rank 0 sometimes receives a torn batch (about two runs in
three), a race that no single run can be trusted to show."""
import random

import zoo_common


def torn(step, batch, ctx):
    if "async_io" in ctx.opts.features and ctx.rank == 0 and step == 0 and random.SystemRandom().random() < 0.65:
        raise RuntimeError("async loader returned a torn batch")


zoo_common.train(zoo_common.options(use_helper=True), on_step=torn)
