"""Bug: each node reads its index file from a node-local folder that was only provisioned on
node 0."""
import os

import zoo_common


def load_index(step, batch, ctx):
    if step == 0:
        with open(os.path.join("node-local", f"node{ctx.node}", "index.txt")) as f:
            f.read()


zoo_common.train(zoo_common.options(use_helper=True), on_step=load_index)
