"""Prints what the running PyTorch says for each failure form of docs/pytorch-messages.md, so the
doc can be checked against 2.13 (.venv) and Debian's 1.13 (/usr/bin/python3) rather than guessed.
usage: messages.py OUTDIR   runs every probe, each in fresh processes (two ranks started by hand
with the environment contract where the form needs a process group), and writes
OUTDIR/<probe>.txt: the probe's stdout and stderr, rank by rank."""
import ctypes
import datetime
import faulthandler
import os
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist

RANK = int(os.environ.get("RANK", "0"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def show(e):
    print(f"type: {type(e).__module__}.{type(e).__qualname__}")
    print("mro: " + " > ".join(c.__qualname__ for c in type(e).__mro__))
    print(f"str: {e}")


def init(seconds=5):
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=seconds))


# ---- single-process probes -------------------------------------------------------------------
def types():
    names = [(dist, n) for n in ["DistError", "DistBackendError", "DistNetworkError",
                                 "DistStoreError"]]
    for owner, name in names + [(torch, "OutOfMemoryError"), (torch.cuda, "OutOfMemoryError")]:
        cls = getattr(owner, name, None)
        if cls is None:
            print(f"{owner.__name__}.{name}: absent")
            continue
        mro = " > ".join(c.__qualname__ for c in cls.__mro__)
        print(f"{owner.__name__}.{name}: {cls.__module__}.{cls.__qualname__} ({mro})")


def cpu_alloc():
    try:
        torch.empty(1 << 50, dtype=torch.uint8)
    except BaseException as e:
        show(e)


def port_in_use():
    port = free_port()
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("0.0.0.0", port))
    holder.listen()
    try:
        dist.TCPStore("127.0.0.1", port, 1, True, timeout=datetime.timedelta(seconds=3))
    except BaseException as e:
        show(e)


def connect_refused():
    try:
        dist.TCPStore("127.0.0.1", free_port(), 2, False, timeout=datetime.timedelta(seconds=3))
    except BaseException as e:
        show(e)


def connect_unknown_host():
    try:
        dist.TCPStore("no-such-host.invalid", 29500, 2, False,
                      timeout=datetime.timedelta(seconds=3))
    except BaseException as e:
        show(e)


def clients_timeout():
    try:
        dist.TCPStore("127.0.0.1", free_port(), 2, True, timeout=datetime.timedelta(seconds=3),
                      wait_for_workers=True)
    except BaseException as e:
        show(e)


def missing_rank():  # rank 0 of 2 starts alone
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                                world_size=2, timeout=datetime.timedelta(seconds=3))
    except BaseException as e:
        show(e)


def store_get_timeout():
    store = dist.TCPStore("127.0.0.1", free_port(), 1, True, timeout=datetime.timedelta(seconds=2))
    try:
        store.get("missing_key")
    except BaseException as e:
        show(e)


def anomaly_nan():
    x = torch.tensor([-1.0], requires_grad=True)
    try:
        with torch.autograd.detect_anomaly():
            torch.sqrt(x).sum().backward()
    except BaseException as e:
        show(e)


def batch_of_one():
    try:
        torch.nn.BatchNorm1d(4).train()(torch.randn(1, 4))
    except BaseException as e:
        show(e)


def torn_checkpoint():
    path = f"/tmp/messages-probe-{os.getpid()}.pt"
    torch.save({"w": torch.zeros(1000)}, path)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    try:
        torch.load(path)
    except BaseException as e:
        show(e)
    os.unlink(path)


def segfault():
    faulthandler.enable()
    ctypes.string_at(0)


# ---- two-rank probes (run by hand, RANK/WORLD_SIZE/MASTER_* set) ------------------------------
def gloo_timeout():
    init(3)
    if RANK == 1:
        time.sleep(8)  # elsewhere, not in the collective
    dist.all_reduce(torch.ones(4))


def peer_closed():
    init(10)
    if RANK == 1:
        time.sleep(1)
        os._exit(3)
    dist.all_reduce(torch.ones(4))


def mismatch_enforce():
    init(10)
    dist.all_reduce(torch.ones(100 if RANK == 1 else 120))


def mismatch_detail():  # run with TORCH_DISTRIBUTED_DEBUG=DETAIL
    init(10)
    dist.all_reduce(torch.ones(100 if RANK == 1 else 120))


def monitored_barrier():
    init(10)
    if RANK == 1:
        time.sleep(6)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=2))


def _two_layers(extra):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)]
    layers += [torch.nn.Linear(2, 2)] if extra else []
    return torch.nn.Sequential(*layers)


def ddp_unused():
    init(10)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.used(x)

    model = torch.nn.parallel.DistributedDataParallel(Net())
    for _ in range(2):
        model(torch.randn(2, 4)).sum().backward()


def ddp_model_mismatch():
    init(10)
    torch.nn.parallel.DistributedDataParallel(_two_layers(extra=RANK == 1))


def ddp_marked_twice():
    init(10)
    from torch.utils.checkpoint import checkpoint

    class Twice(torch.nn.Module):  # one layer in two reentrant checkpoints: two backward passes
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = checkpoint(self.layer, x, use_reentrant=True)
            return checkpoint(self.layer, y, use_reentrant=True)

    model = torch.nn.parallel.DistributedDataParallel(Twice(), find_unused_parameters=True)
    model(torch.randn(2, 4, requires_grad=True)).sum().backward()


def join_uneven():
    init(10)
    from torch.distributed.algorithms.join import Join

    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    with Join([model], throw_on_early_termination=True):
        for _ in range(2 if RANK == 0 else 4):
            model(torch.randn(2, 4)).sum().backward()


def c10d_log():  # run with TORCH_CPP_LOG_LEVEL=INFO
    init(10)
    dist.barrier()


SINGLE = [types, cpu_alloc, port_in_use, connect_refused, connect_unknown_host, clients_timeout,
          missing_rank, store_get_timeout, anomaly_nan, batch_of_one, torn_checkpoint, segfault]
TWO_RANKS = {gloo_timeout: {}, peer_closed: {}, mismatch_enforce: {},
             mismatch_detail: {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, monitored_barrier: {},
             ddp_unused: {}, ddp_model_mismatch: {}, ddp_marked_twice: {}, join_uneven: {},
             c10d_log: {"TORCH_CPP_LOG_LEVEL": "INFO"}}


def run_all(outdir):
    os.makedirs(outdir, exist_ok=True)
    me = os.path.abspath(__file__)
    for probe in SINGLE:
        p = subprocess.run([sys.executable, me, "--probe", probe.__name__], capture_output=True,
                           text=True, timeout=120)
        with open(os.path.join(outdir, probe.__name__ + ".txt"), "w") as f:
            f.write(f"exit {p.returncode}\n{p.stdout}{p.stderr}")
    for probe, extra in TWO_RANKS.items():
        port = free_port()
        procs = [subprocess.Popen([sys.executable, me, "--probe", probe.__name__],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env={**os.environ, **extra, "RANK": str(r), "LOCAL_RANK": str(r),
                                       "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                                       "MASTER_PORT": str(port)})
                 for r in range(2)]
        with open(os.path.join(outdir, probe.__name__ + ".txt"), "w") as f:
            for r, p in enumerate(procs):
                out, _ = p.communicate(timeout=120)
                f.write(f"--- rank {r}: exit {p.returncode}\n{out}")


if __name__ == "__main__":
    if sys.argv[1] == "--only":  # messages.py --only PROBE OUTDIR: one probe again
        SINGLE = [p for p in SINGLE if p.__name__ == sys.argv[2]]
        TWO_RANKS = {p: e for p, e in TWO_RANKS.items() if p.__name__ == sys.argv[2]}
        run_all(sys.argv[3])
    elif sys.argv[1] == "--probe":
        globals()[sys.argv[2]]()
    else:
        run_all(sys.argv[1])
