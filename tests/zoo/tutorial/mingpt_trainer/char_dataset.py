from dataclasses import dataclass

import torch
from torch.utils.data import Dataset


@dataclass
class DataConfig:
    path: str = None
    block_size: int = None
    train_split: float = None
    truncate: float = 1.0


class CharDataset(Dataset):
    """Every window of block_size + 1 characters of a text file: input and next-character target."""

    def __init__(self, data_cfg: DataConfig):
        with open(data_cfg.path, encoding="utf-8") as f:
            data = f.read()
        data = data[: int(len(data) * data_cfg.truncate)]
        chars = sorted(set(data))
        print("Data has %d characters, %d unique." % (len(data), len(chars)))
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}
        self.block_size = data_cfg.block_size
        self.vocab_size = len(chars)
        self.data = data

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        chunk = self.data[idx : idx + self.block_size + 1]
        dix = [self.stoi[s] for s in chunk]
        return torch.tensor(dix[:-1], dtype=torch.long), torch.tensor(dix[1:], dtype=torch.long)
