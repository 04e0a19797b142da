"""The model and the metric sync the live fixtures share; `case` plants the bugs."""
import torch
import torch.distributed as dist


class Net(torch.nn.Module):
    def __init__(self, case):
        super().__init__()
        self.body = torch.nn.Linear(4, 8)
        self.head = torch.nn.Linear(8, 2)
        # A second head left over from an experiment: never used, so DDP without
        # find_unused_parameters fails in the second iteration.
        self.aux_head = torch.nn.Linear(8, 2) if case == "unused" else None

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def sync_metrics(loss, rank, step, case):
    """Per-class metrics averaged over ranks: 120 values, but in the mismatch case rank 1's batch
    at step 2 holds only 100 classes, so its tensor is shorter."""
    n = 100 if case == "mismatch" and rank == 1 and step == 2 else 120
    metrics = torch.full((n,), float(loss))
    dist.all_reduce(metrics)
    return metrics / dist.get_world_size()


def evaluate(rank, case):
    """End-of-training evaluation; in the hang case rank 1 has no evaluation shard and skips the
    all_reduce the other ranks wait in."""
    if case == "hang" and rank == 1:
        return None
    score = torch.tensor([float(rank)])
    dist.all_reduce(score)
    return score
