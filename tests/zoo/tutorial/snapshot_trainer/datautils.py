import torch
from torch.utils.data import Dataset


class MyTrainDataset(Dataset):
    """Feature vectors with a class label each, as exported from the labelling tool."""

    def __init__(self, size, num_classes=10, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.size = size
        self.features = torch.rand(size, 20, generator=g)
        self.labels = torch.randint(0, num_classes, (size,), generator=g)
        self.labels[301] = num_classes  # a record the labelling tool exported as "other"

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.features[index], self.labels[index]
