"""Simple training loop; boilerplate that could apply to any network, nothing GPT-specific."""
import os
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class TrainerConfig:
    max_epochs: int = None
    batch_size: int = None
    data_loader_workers: int = None
    grad_norm_clip: float = None
    snapshot_path: Optional[str] = None
    save_every: int = None
    eval_every: int = 0
    use_amp: bool = False


@dataclass
class Snapshot:
    model_state: "Dict[str, torch.Tensor]"
    optimizer_state: Dict[str, Any]
    finished_epoch: int


class Trainer:
    def __init__(self, trainer_config: TrainerConfig, model, optimizer, train_dataset, test_dataset=None):
        self.config = trainer_config
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.device = torch.device("cuda", self.local_rank) if torch.cuda.is_available() else torch.device("cpu")
        # data stuff
        self.train_dataset = train_dataset
        self.train_loader = self._prepare_dataloader(train_dataset)
        self.test_loader = self._prepare_dataloader(test_dataset) if test_dataset else None
        # initialize train states
        self.epochs_run = 0
        self.step = 0
        self.model = model.to(self.device)
        self.optimizer = optimizer
        self.save_every = self.config.save_every
        if self.config.snapshot_path is None:
            self.config.snapshot_path = "snapshot.pt"
        self._load_snapshot()
        self.model = DDP(self.model, device_ids=[self.local_rank] if torch.cuda.is_available() else None)

    def _prepare_dataloader(self, dataset: Dataset):
        return DataLoader(
            dataset,
            batch_size=self.config.batch_size,
            pin_memory=torch.cuda.is_available(),
            shuffle=False,
            num_workers=self.config.data_loader_workers,
            sampler=DistributedSampler(dataset),
        )

    def _load_snapshot(self):
        try:
            snapshot_data = torch.load(self.config.snapshot_path, map_location="cpu")
        except FileNotFoundError:
            print("Snapshot not found. Training model from scratch")
            return
        snapshot = Snapshot(**snapshot_data)
        self.model.load_state_dict(snapshot.model_state)
        self.optimizer.load_state_dict(snapshot.optimizer_state)
        self.epochs_run = snapshot.finished_epoch
        print(f"Resuming training from snapshot at Epoch {self.epochs_run}")

    def _run_batch(self, source, targets, train: bool = True) -> float:
        with torch.set_grad_enabled(train):
            _, loss = self.model(source, targets)
        if train:
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_norm_clip)
            self.optimizer.step()
        return loss.item()

    def _run_epoch(self, epoch: int, dataloader: DataLoader, train: bool = True):
        dataloader.sampler.set_epoch(epoch)
        for it, (source, targets) in enumerate(dataloader):
            step_type = "Train" if train else "Eval"
            source = source.to(self.device)
            targets = targets.to(self.device)
            batch_loss = self._run_batch(source, targets, train)
            if it % 100 == 0:
                print(f"[GPU{self.global_rank}] Epoch {epoch} | Iter {it} | {step_type} Loss {batch_loss:.5f}")
            if train:
                self.step += 1
                if self.config.eval_every and self.step % self.config.eval_every == 0:
                    self._evaluate()

    def _evaluate(self):
        """Mean loss over the test split, every eval_every steps."""
        self.model.eval()
        total, batches = 0.0, 0
        with torch.no_grad():
            for source, targets, mask in self.test_loader:
                _, loss = self.model(source.to(self.device), targets.to(self.device))
                total += loss.item()
                batches += 1
        self.model.train()
        print(f"[GPU{self.global_rank}] Step {self.step} | Eval Loss {total / max(batches, 1):.5f}")

    def _save_snapshot(self, epoch):
        model = self.model
        raw_model = model.module if hasattr(model, "module") else model
        snapshot = Snapshot(model_state=raw_model.state_dict(), optimizer_state=self.optimizer.state_dict(),
                            finished_epoch=epoch)
        torch.save(asdict(snapshot), self.config.snapshot_path)
        print(f"Snapshot saved at epoch {epoch}")

    def train(self):
        for epoch in range(self.epochs_run, self.config.max_epochs):
            epoch += 1
            self._run_epoch(epoch, self.train_loader, train=True)
            if self.local_rank == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)
