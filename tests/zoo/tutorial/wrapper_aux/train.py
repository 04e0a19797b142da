"""Multi-task classifier: a shared encoder, a class head and an auxiliary head that predicts the
sample's difficulty score (weighted by --aux-weight)."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Shapes(Dataset):
    """Synthetic 8x8 images of four shape classes, generated from the index."""

    def __init__(self, n, seed=7):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n, 1, 8, 8, generator=g)
        self.labels = torch.randint(0, 4, (n,), generator=g)
        self.difficulty = torch.rand(n, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i], self.difficulty[i]


class MultiTaskNet(nn.Module):
    def __init__(self, use_aux):
        super().__init__()
        self.use_aux = use_aux
        self.encoder = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                                     nn.Linear(8 * 8 * 8, 64), nn.ReLU())
        self.cls_head = nn.Linear(64, 4)
        self.aux_head = nn.Linear(64, 1)

    def forward(self, x):
        h = self.encoder(x)
        logits = self.cls_head(h)
        aux = self.aux_head(h).squeeze(-1) if self.use_aux else None
        return logits, aux


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="./data")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--aux-weight", type=float, default=0.0, help="0 turns the auxiliary task off")
    args = parser.parse_args()

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    dataset = Shapes(256)
    sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    model = nn.parallel.DistributedDataParallel(MultiTaskNet(use_aux=args.aux_weight > 0))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for images, labels, difficulty in train_loader:
            optimizer.zero_grad()
            logits, aux = model(images)
            loss = F.cross_entropy(logits, labels)
            if aux is not None:
                loss = loss + args.aux_weight * F.mse_loss(aux, difficulty)
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
            os.makedirs("logs", exist_ok=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
