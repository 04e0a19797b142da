"""Bug: a batch of 6 or more samples makes the pinned-memory buffer outgrow the container's
limit, and the kernel's OOM killer sends SIGKILL (simulated: the process kills itself)."""
import os
import signal

import zoo_common


def pin(step, batch, ctx):
    if len(batch) >= 6:
        os.kill(os.getpid(), signal.SIGKILL)


zoo_common.train(zoo_common.options(use_helper=False), on_step=pin)
