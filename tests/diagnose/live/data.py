"""The data side of the live fixtures' training scripts: the user code where some planted
failures start (a corrupt sample, a rank killed while loading)."""
import os
import signal

import torch


def load_batch(rank, step, case):
    """Batch `step` of this rank's shard: 8 samples of 4 features and a 0/1 label."""
    g = torch.Generator().manual_seed(100 * rank + step)
    x = torch.randn(8, 4, generator=g)
    y = torch.randint(0, 2, (8,), generator=g)
    if rank == 1 and step == 2:
        if case == "exception":
            y[5] = 7
            check_labels(y, first_index=8 * step)
        if case == "sigkill":
            # What the host's OOM killer does to a rank that grew too large.
            os.kill(os.getpid(), signal.SIGKILL)
    return x, y


def check_labels(y, first_index):
    bad = (y > 1).nonzero().flatten().tolist()
    if bad:
        raise ValueError(f"sample {first_index + bad[0]}: label {int(y[bad[0]])} outside 0..1")
