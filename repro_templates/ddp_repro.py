#!/usr/bin/env python3
# @HEADER@
#
# A standalone PyTorch DDP program equivalent to the minimal configuration ddpbisect found for a
# built-in workload: the same model blocks, data, shards, settings and planted fault, on Gloo (CPU).
# It needs only Python 3 and PyTorch.
#
#   python3 repro.py            # launches the ranks itself, like torchrun, and waits for them
#   torchrun --nproc-per-node=N repro.py   # or any launcher that sets RANK, WORLD_SIZE, MASTER_*
#
# Exit status: 0 when every rank finished, 1 when any failed or hung (stacks are printed first).
import faulthandler
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

CONFIG = json.loads(r'''@CONFIG_JSON@''')
TARGET = "@TARGET@"
MASK = (1 << 64) - 1


def parse_indices(text):
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def parse_seconds(text):
    units = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
    for suffix, scale in units:
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * scale
    return float(text)


def launch(world, per_node):
    """Starts one process per rank with torchrun's environment contract and reaps all of them."""
    env = dict(os.environ)
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", str(20000 + os.getpid() % 10000))
    env.update(WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(per_node), PYTHONUNBUFFERED="1")
    procs = []
    for rank in range(world):
        env_r = dict(env, RANK=str(rank), LOCAL_RANK=str(rank % per_node),
                     GROUP_RANK=str(rank // per_node), NODE_RANK=str(rank // per_node))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env_r))
    deadline = time.monotonic() + float(os.environ.get("REPRO_TIMEOUT", "120"))
    first_failure = None
    while any(p.poll() is None for p in procs):
        now = time.monotonic()
        failed = [r for r, p in enumerate(procs) if p.poll() not in (None, 0)]
        if failed and first_failure is None:
            first_failure = now
        # Like torchrun: once a rank failed the others get a few seconds, then they are stopped;
        # with no failure at all, the deadline declares a hang.
        if (first_failure is not None and now - first_failure > 10) or now > deadline:
            running = [r for r, p in enumerate(procs) if p.poll() is None]
            print(f"repro: rank(s) {running} still running; their Python stacks:", flush=True)
            for r in running:
                procs[r].send_signal(signal.SIGUSR1)
            time.sleep(1)
            for r in running:
                procs[r].kill()
            break
        time.sleep(0.05)
    status = 0
    for rank, p in enumerate(procs):
        rc = p.wait()
        print(f"repro: rank {rank} exited {rc}", flush=True)
        status = status or (rc != 0)
    return status


class Faults:
    """The planted faults of the built-in workload, with ddpbisect's firing conditions."""

    def __init__(self, faults, trial, rank, node, world, shard):
        self.faults, self.trial, self.shard = faults, trial, set(shard)
        self.rank, self.node, self.world = rank, node, world

    def _draw(self, index):
        x = (self.trial["seed"] * 0x9E3779B97F4A7C15 + index * 0xBF58476D1CE4E5B9 + 1) & MASK
        x ^= x >> 31
        x = (x * 0x94D049BB133111EB) & MASK
        x ^= x >> 29
        return (x >> 11) / 9007199254740992.0

    def _holds(self, index, fault, step):
        q = fault.get("requires", {})
        t = self.trial
        checks = [
            "ranks" not in q or self.rank in q["ranks"],
            "min_world_size" not in q or self.world >= q["min_world_size"],
            "nodes" not in q or self.node in q["nodes"],
            "step" not in q or step >= q["step"],
            all(c in t["components"] for c in q.get("components", [])),
            all(c not in t["components"] for c in q.get("absent_components", [])),
            all(f in t["features"] for f in q.get("features", [])),
            "samples" not in q or bool(self.shard & set(parse_indices(q["samples"]))),
            "all_samples" not in q or set(parse_indices(q["all_samples"])) <= self.shard,
        ]
        for name, bound in q.get("params", {}).items():
            v = t["params"].get(name)
            checks.append(v is not None and bound.get("min", v) <= v <= bound.get("max", v))
        if fault.get("probability", 1.0) < 1.0:
            checks.append(self._draw(index) < fault["probability"])
        return all(checks)

    def active(self, kind, step):
        return [f for i, f in enumerate(self.faults) if f["kind"] == kind and self._holds(i, f, step)]

    def planted(self, kind):
        return any(f["kind"] == kind for f in self.faults)


def main():
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from datetime import timedelta
    from torch.nn.parallel import DistributedDataParallel as DDP

    spec, trial = CONFIG["spec"], CONFIG["trial"]
    builtin = spec["workload"]["builtin"]
    data, params, features = builtin["dataset"], trial["params"], trial["features"]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    node = int(os.environ.get("GROUP_RANK", os.environ.get("NODE_RANK", "0")))
    torch.set_num_threads(params.get("threads", 1))

    # The data: ddpbisect's synthetic set (hashed Gaussians, a fixed linear target) or the file.
    def splitmix(x):
        x = (x + 0x9E3779B97F4A7C15) & MASK
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
        return x ^ (x >> 31)

    def gaussian(key):
        u1 = ((splitmix(key & MASK) >> 11) + 1.0) / 9007199254740993.0
        u2 = (splitmix((key ^ 0x5BD1E995) & MASK) >> 11) / 9007199254740992.0
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    classification = data.get("task") == "classification"
    rows = None
    if data["kind"] == "csv":
        with open(data["path"]) as f:
            rows = [[float(c) for c in line.split(",")] for line in f
                    if line.strip() and not line.startswith("#")]
    elif data["kind"] == "binary":
        import struct
        with open(data["path"], "rb") as f:
            _, _, count, width = struct.unpack("<4sIII", f.read(16))
            flat = struct.unpack(f"<{count * (width + 1)}f", f.read(4 * count * (width + 1)))
        rows = [list(flat[i * (width + 1):(i + 1) * (width + 1)]) for i in range(count)]
    width = len(rows[0]) - 1 if rows else data.get("features", 16)
    outs = data.get("classes", 4) if classification else 1
    seed = data.get("seed", 1)
    weights = [gaussian(seed * 7919 + i + 0xABCDEF) / math.sqrt(width) for i in range(width * outs)]

    def sample(i):
        if rows is not None:
            return rows[i][:width], rows[i][width]
        x = [gaussian(((seed << 32) & MASK) ^ (i * 131071 + j)) for j in range(width)]
        v = [sum(weights[c * width + j] * x[j] for j in range(width)) for c in range(outs)]
        return x, float(max(range(outs), key=lambda c: v[c])) if classification else math.tanh(v[0])

    def batch_of(indices):
        xs, ys = zip(*(sample(i) for i in indices))
        y = torch.tensor(ys)
        return torch.tensor(xs), (y.long() if classification else y)

    # DistributedSampler's sharding over the minimal subset.
    subset = parse_indices(trial["samples"])
    n = len(subset)
    total = (n // world) * world if data.get("drop_last") else (
        -(-n // world) * world if data.get("pad", True) and n else n)
    shard = [subset[i % n] for i in range(rank, total, world)]
    if not shard:
        raise ValueError(f"rank {rank} got an empty shard: {n} samples across {world} ranks")
    faults = Faults(builtin.get("faults", []), trial, rank, node, world, shard)

    # The model: the minimal component list, block for block.
    hidden, vocab = params.get("hidden", 32), 32

    class Block(nn.Module):
        def __init__(self, name, w):
            super().__init__()
            self.name, self.width = name, w
            if name == "linear":
                self.fc, self.width = nn.Linear(w, hidden), hidden
            elif name == "mlp":
                self.fc1, self.fc2, self.width = nn.Linear(w, 2 * hidden), nn.Linear(2 * hidden, hidden), hidden
            elif name == "conv1d":
                self.conv, self.width = nn.Conv1d(w, hidden, 3, padding=1), hidden
            elif name == "layernorm":
                self.norm = nn.LayerNorm(w)
            elif name == "batchnorm":
                self.norm = nn.BatchNorm1d(w)
            elif name == "dropout":
                self.drop = nn.Dropout(0.1)
            elif name == "residual":
                self.fc = nn.Linear(w, w)
            elif name == "attention":
                self.qkv, self.out = nn.Linear(w, 3 * w), nn.Linear(w, w)

        def forward(self, x):
            k = self.name
            if k == "linear":
                return torch.tanh(self.fc(x))
            if k == "mlp":
                return self.fc2(torch.relu(self.fc1(x)))
            if k == "conv1d":
                return torch.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
            if k == "layernorm":
                return self.norm(x)
            if k == "batchnorm":
                return self.norm(x.transpose(1, 2)).transpose(1, 2)
            if k == "dropout":
                return self.drop(x)
            if k == "residual":
                return x + self.fc(torch.relu(x))
            q, kk, v = self.qkv(x).chunk(3, -1)
            scores = torch.matmul(q, kk.transpose(1, 2)) / math.sqrt(self.width)
            return x + self.out(torch.matmul(torch.softmax(scores, -1), v))

    class Net(nn.Module):
        def __init__(self, components):
            super().__init__()
            self.unused, w = set(), 1
            self.embedding = nn.Embedding(vocab, hidden) if "embedding" in components else None
            if self.embedding is not None:
                w = hidden
            self.blocks = nn.ModuleList()
            for c in components:
                if c not in ("embedding", "head"):
                    self.blocks.append(Block(c, w))
                    w = self.blocks[-1].width
            self.head = nn.Linear(w, outs) if "head" in components else None
            if self.head is None:
                self.register_buffer("fixed_projection", torch.ones(w, outs) / w)

        def forward(self, x):
            def use(name, inp, out):  # an unused component's parameters get no gradient
                return out.detach() + 0.0 * inp.sum() if name in self.unused else out

            if self.embedding is not None:
                h = self.embedding(((x + 2.0) * (vocab / 4.0)).floor().clamp(0, vocab - 1).long())
                h = h.detach() if "embedding" in self.unused else h
            else:
                h = x.unsqueeze(-1)
            for b in self.blocks:
                h = use(b.name, h, b(h))
            h = h.mean(1)
            return use("head", h, self.head(h)) if self.head is not None else h @ self.fixed_projection

    timeout = timedelta(seconds=parse_seconds(builtin.get("collective_timeout", "30m")))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
    torch.manual_seed(seed)
    net = Net(trial["components"])
    has_params = any(p.requires_grad for p in net.parameters())
    model = DDP(net, broadcast_buffers=False) if has_params else net
    opt = torch.optim.SGD(net.parameters(), lr=builtin.get("lr", 0.05)) if has_params else None
    steps, batch_size = params.get("steps", 20), max(1, params.get("batch_size", 16))
    eval_every = max(1, params.get("eval_every", 5))
    accum = max(1, params.get("grad_accum", 2)) if "grad_accum" in features else 1
    straggle, diverged, cursor, loss_value = 0.0, False, 0, 0.0

    def stop_calling_collectives():
        while True:
            time.sleep(3600)

    def deadlocked_loader():
        lock = threading.Lock()
        lock.acquire()
        loader = threading.Thread(target=lock.acquire)  # never acquired
        loader.start()
        loader.join()

    for step in range(steps):
        for f in faults.active("straggler", step):
            straggle = parse_seconds(f.get("delay", "0s"))
        for f in faults.active("unused_parameter", step):
            net.unused.add(f["component"])
        for f in faults.active("missing_file", step):
            open(f["path"], "rb").close()
        for f in faults.active("raise", step):
            raise RuntimeError(f"{f.get('message', '')} (rank {rank}, step {step})")
        if faults.active("oom", step):
            torch.empty(1 << 42).fill_(0)
        if faults.active("abort", step):
            print(f"repro: planted abort on rank {rank} at step {step}", file=sys.stderr, flush=True)
            os.abort()
        if faults.active("segfault", step):
            os.kill(os.getpid(), signal.SIGSEGV)
        if faults.active("sigkill", step):
            os.kill(os.getpid(), signal.SIGKILL)
        for f in faults.active("exit", step):
            os._exit(f.get("exit_code", 1))
        for f in faults.active("hang", step):
            stop_calling_collectives() if f.get("mode") == "collectives" else deadlocked_loader()
        time.sleep(straggle)
        if not diverged and faults.active("divergence", step):
            with torch.no_grad():
                for p in net.parameters():
                    p.add_(1e-3 * (rank + 1))
            diverged = True
        if opt:
            opt.zero_grad(set_to_none=True)
        loss_value = 0.0
        for micro in range(accum):
            batch = [shard[(cursor + i) % len(shard)] for i in range(min(batch_size, len(shard)))]
            cursor += len(batch)
            x, y = batch_of(batch)
            out = model(x)
            for f in faults.active("nan", step):
                corrupt = parse_indices(f["requires"]["samples"]) if "samples" in f.get("requires", {}) else None
                mask = torch.tensor([[math.nan if corrupt is None or i in corrupt else 0.0] for i in batch])
                out = out + mask
            loss = F.cross_entropy(out, y) if classification else F.mse_loss(out.squeeze(-1), y)
            if not math.isfinite(loss.item()):
                raise FloatingPointError(f"non-finite loss {loss.item()} at step {step} on rank {rank}")
            if loss.requires_grad:
                loss.backward()
            loss_value += loss.item() / accum
        if faults.active("collective_mismatch", step):
            dist.all_reduce(torch.ones(3))  # only the ranks where the fault fires call this one
        if faults.planted("size_mismatch"):
            extra = 4 * (rank + 1) if faults.active("size_mismatch", step) else 0
            dist.all_reduce(torch.zeros(8 + extra))
        if opt:
            if "grad_clip" in features:
                torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
        if "sync_bn" in features:
            for b in net.buffers():
                if b.is_floating_point() and b.dim() == 1:
                    dist.all_reduce(b)
                    b.div_(world)
        if "param_checksum" in features:
            s = sum(p.double().sum().item() for p in net.parameters())
            t = torch.tensor([s, -s], dtype=torch.double)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            if t[0].item() + t[1].item() > 1e-9 * (1.0 + abs(s)):
                raise RuntimeError(f"parameters diverged across ranks at step {step}: "
                                   f"checksums range from {-t[1].item()} to {t[0].item()}")
        if (step + 1) % eval_every == 0 and "eval" in features:
            with torch.no_grad():
                net.eval()
                x, _ = batch_of(shard[:8])
                dist.all_reduce(net(x).abs().mean().reshape(1))
                net.train()
        if (step + 1) % eval_every == 0 and "checkpoint" in features and has_params:
            path = f"/tmp/repro-checkpoint-{os.environ['MASTER_PORT']}.pt"
            if rank == 0:
                torch.save(net.state_dict(), path)
            dist.barrier()
            net.load_state_dict(torch.load(path))
    print(f"repro: rank {rank} finished {steps} steps; final loss {loss_value:.6g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if "RANK" not in os.environ:
        trial = CONFIG["trial"]
        sys.exit(launch(trial["world_size"], trial["procs_per_node"]))
    main()
