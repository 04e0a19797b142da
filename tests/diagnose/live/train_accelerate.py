"""The live fixtures' trainer under Hugging Face Accelerate (`accelerate launch --cpu`).
usage: train_accelerate.py CASE, CASE as in train_ddp.py."""
import datetime
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs

import data
from model import Net, evaluate, sync_metrics

CASE = sys.argv[1]


def main():
    pg = InitProcessGroupKwargs(backend="gloo", timeout=datetime.timedelta(seconds=15))
    accelerator = Accelerator(cpu=True, kwargs_handlers=[pg])
    rank = accelerator.process_index
    model = Net(CASE)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = accelerator.prepare(model, opt)
    for step in range(4):
        x, y = data.load_batch(rank, step, CASE)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()
        metrics = sync_metrics(loss.item(), rank, step, CASE)
        accelerator.print(f"step {step} loss {loss.item():.4f} mean {metrics[0]:.4f}")
    evaluate(rank, CASE)
    accelerator.wait_for_everyone()
    accelerator.print("training done")
    accelerator.end_training()


if __name__ == "__main__":
    main()
