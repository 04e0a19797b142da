"""Train a character-level GPT with DDP. Settings come from gpt_train_cfg.yaml; override any of them on
the command line as section.key=value, e.g.

    torchrun --nproc_per_node=2 main.py trainer_config.max_epochs=2 trainer_config.batch_size=64
"""
import sys

import torch
import yaml
from torch.distributed import destroy_process_group, init_process_group
from torch.utils.data import random_split

from char_dataset import CharDataset, DataConfig
from model import GPT, GPTConfig, OptimizerConfig, create_optimizer
from trainer import Trainer, TrainerConfig


def load_config(path, overrides):
    with open(path) as f:
        cfg = yaml.safe_load(f)
    for item in overrides:
        key, _, value = item.partition("=")
        section, _, name = key.partition(".")
        if not name or section not in cfg:
            sys.exit(f"bad override {item!r}: expected section.key=value")
        cfg[section][name] = yaml.safe_load(value)
    return cfg


def ddp_setup():
    init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")


def get_train_objs(gpt_cfg: GPTConfig, opt_cfg: OptimizerConfig, data_cfg: DataConfig):
    dataset = CharDataset(data_cfg)
    train_len = int(len(dataset) * data_cfg.train_split)
    train_set, test_set = random_split(dataset, [train_len, len(dataset) - train_len],
                                       generator=torch.Generator().manual_seed(42))
    gpt_cfg.vocab_size = dataset.vocab_size
    gpt_cfg.block_size = dataset.block_size
    model = GPT(gpt_cfg)
    optimizer = create_optimizer(model, opt_cfg)
    return model, optimizer, train_set, test_set


def main(cfg):
    ddp_setup()
    gpt_cfg = GPTConfig(**cfg["gpt_config"])
    opt_cfg = OptimizerConfig(**cfg["optimizer_config"])
    data_cfg = DataConfig(**cfg["data_config"])
    trainer_cfg = TrainerConfig(**cfg["trainer_config"])
    torch.manual_seed(0)
    model, optimizer, train_data, test_data = get_train_objs(gpt_cfg, opt_cfg, data_cfg)
    trainer = Trainer(trainer_cfg, model, optimizer, train_data, test_data)
    trainer.train()
    destroy_process_group()


if __name__ == "__main__":
    main(load_config("gpt_train_cfg.yaml", sys.argv[1:]))
