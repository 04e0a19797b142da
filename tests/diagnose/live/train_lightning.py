"""The live fixtures' trainer under Lightning: Trainer(strategy="ddp", accelerator="cpu",
devices=2) starts the other ranks itself. usage: train_lightning.py CASE, CASE as in
train_ddp.py; the hang case uses 3 ranks and a 15 s process-group timeout."""
import datetime
import sys

import lightning as L
import torch
from lightning.pytorch.strategies import DDPStrategy

import data
from model import Net, evaluate, sync_metrics

CASE = sys.argv[1]


class Module(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = Net(CASE)

    def training_step(self, batch, step):
        x, y = data.load_batch(self.global_rank, step, CASE)
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        sync_metrics(loss.item(), self.global_rank, step, CASE)
        return loss

    def on_train_end(self):
        evaluate(self.global_rank, CASE)
        self.trainer.strategy.barrier()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    if CASE == "hang":
        strategy = DDPStrategy(timeout=datetime.timedelta(seconds=15))
        devices = 3
    else:
        strategy, devices = "ddp", 2
    trainer = L.Trainer(strategy=strategy, accelerator="cpu", devices=devices, max_steps=4,
                        logger=False, enable_checkpointing=False)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(64, 1)))
    trainer.fit(Module(), loader)


if __name__ == "__main__":
    main()
