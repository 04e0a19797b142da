"""What ddpbisect's in-process agent (docs/agent.md) costs, against no agent in the same run:
  - per training step: a 2-rank Gloo DDP loop (DistributedSampler + DataLoader, a small MLP of
    0.3 M parameters, batch 64, the loss all-reduced every step for logging) with and without the
    agent, rounds alternating which goes first; then the same processes with the agent's recording
    switched on and off every 10 steps. The agent traces every call (DDP's forward and backward,
    the all-reduce), writes its trace file and prints heartbeats. Target: <= 2 % per step.
  - startup: `python3 -c pass` with and without the agent loaded by sitecustomize.
  - stack-request latency: from the signal to the DDPBISECT_COLLECTIVES line of a rank hung in
    all_reduce.
usage: python3 bench/agent_overhead.py [--steps N] [--rounds R] [--skip-latency]"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "python" / "agent"
STACK_SIGNAL = signal.SIGUSR2


def rank_main():
    """One rank of the step loop; rank 0 prints its step times (after warm-up) as JSON."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.utils.data import DataLoader, Dataset, DistributedSampler

    class Features(Dataset):
        def __init__(self, n):
            g = torch.Generator().manual_seed(0)
            self.x = torch.randn(n, 64, generator=g)
            self.y = torch.randint(0, 10, (n,), generator=g)

        def __len__(self):
            return len(self.y)

        def __getitem__(self, i):
            return self.x[i], self.y[i]

    steps, warmup, batch = int(os.environ["BENCH_STEPS"]), 20, 64
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = Features((steps + warmup) * batch * dist.get_world_size())
    train_loader = DataLoader(data, batch_size=batch, sampler=DistributedSampler(data))
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times, cpu, active = [], [], []
    agent = sys.modules.get("ddpbisect_agent") if os.environ.get("BENCH_TOGGLE") else None
    start, start_cpu = time.perf_counter(), time.thread_time()
    for i, (x, y) in enumerate(train_loader):
        if agent is not None:  # both ranks switch together: recording on for 10 steps, off for 10
            agent.state.role = "rank" if (i // 10) % 2 == 0 else "helper"
            active.append(agent.state.role == "rank")
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        logged = loss.detach().clone()
        dist.all_reduce(logged)
        now, now_cpu = time.perf_counter(), time.thread_time()
        times.append(now - start)
        cpu.append(now_cpu - start_cpu)
        start, start_cpu = now, now_cpu
    dist.barrier()
    if dist.get_rank() == 0:
        print("BENCH " + json.dumps({"wall": times[warmup:], "cpu": cpu[warmup:], "active": active[warmup:]}),
              flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(agent, trial_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDPBISECT_")}
    env.update(PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1", OMP_NUM_THREADS="1")
    if agent:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(AGENT), env.get("PYTHONPATH")]))
        env.update(DDPBISECT_AGENT="1", DDPBISECT_STACK_SIGNAL=str(int(STACK_SIGNAL)),
                   DDPBISECT_TRIAL_DIR=trial_dir)
    return env


def step_times(agent, steps, toggle=False, attempts=3):
    """Step times of one 2-rank job. A rank of either kind can die at exit on this machine
    ("terminate called without an active exception" from Gloo's threads, torch 2.13 too): such a
    job is run again, and said so."""
    for attempt in range(attempts):
        result = _job(agent, steps, toggle)
        if isinstance(result, dict):
            return result
        print("  (job with agent=%s failed, run again: %s)" % (agent, result))
    sys.exit("the job failed %d times" % attempts)


def _job(agent, steps, toggle):
    with tempfile.TemporaryDirectory() as trial_dir:
        env = dict(environment(agent, trial_dir), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                   WORLD_SIZE="2", BENCH_STEPS=str(steps), AGENT_BENCH_RANK="1")
        if toggle:
            env["BENCH_TOGGLE"] = "1"
        procs = [subprocess.Popen([sys.executable, __file__], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
        outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            lines = [l for l in err.splitlines() if l.strip()]
            return "exit %d, %s" % (p.returncode, lines[0] if lines else "no output")
    line = next(l for l in outs[0][0].splitlines() if l.startswith("BENCH "))
    beats = outs[0][0].count("DDPBISECT_HEARTBEAT")
    if agent and not toggle and beats == 0:
        sys.exit("the agent printed %d heartbeats for %d steps" % (beats, steps))
    return json.loads(line[6:])


def bench_steps(steps, rounds):
    """Wall time per step, and the main thread's CPU time per step (less disturbed by other load
    on the machine), without and with the agent; rounds alternate which runs first."""
    total = {(a, k): [] for a in (False, True) for k in ("wall", "cpu")}
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        medians = {}
        for agent in order:
            result = step_times(agent, steps)
            for kind in ("wall", "cpu"):
                total[agent, kind].extend(result[kind])
                medians[agent, kind] = statistics.median(result[kind])
        print("round %d: median step %.3f ms without the agent, %.3f ms with it (%+.1f %%); "
              "main-thread CPU %.3f / %.3f ms (%+.1f %%)" % (
                  r + 1, medians[False, "wall"] * 1e3, medians[True, "wall"] * 1e3,
                  (medians[True, "wall"] / medians[False, "wall"] - 1) * 100,
                  medians[False, "cpu"] * 1e3, medians[True, "cpu"] * 1e3,
                  (medians[True, "cpu"] / medians[False, "cpu"] - 1) * 100))
    for kind, label in (("wall", "per step"), ("cpu", "main-thread CPU per step")):
        off, on = statistics.median(total[False, kind]), statistics.median(total[True, kind])
        print("%s, %d steps x %d rounds: %.3f ms without, %.3f ms with the agent: ratio %.3f "
              "(%+.1f %%, %+.0f us; target <= 2 %%)" % (label, steps, rounds, off * 1e3, on * 1e3,
                                                        on / off, (on / off - 1) * 100, (on - off) * 1e6))


def bench_toggle(steps, rounds):
    """The same two processes, the agent recording for 10 steps and passing through for the next
    10: the machine's load shifts far less within a run than between runs. What this leaves out
    (the calls through the agent's wrappers when it passes through, its thread) is in the A/B."""
    samples = {(a, k): [] for a in (False, True) for k in ("wall", "cpu")}
    for r in range(rounds):
        result = step_times(True, steps, toggle=True)
        for kind in ("wall", "cpu"):
            for t, active in zip(result[kind], result["active"]):
                samples[active, kind].append(t)
    for kind, label in (("wall", "per step"), ("cpu", "main-thread CPU per step")):
        a, b = statistics.median(samples[False, kind]), statistics.median(samples[True, kind])
        print("same processes, recording toggled every 10 steps (%d steps x %d runs), %s: %.3f ms "
              "passing through, %.3f ms recording: ratio %.3f (%+.1f %%, %+.0f us; target <= 2 %%)" % (
                  steps, rounds, label, a * 1e3, b * 1e3, b / a, (b / a - 1) * 100, (b - a) * 1e6))


def bench_startup(runs=30):
    """python -c pass, as the environment has it (PYTHONDONTWRITEBYTECODE=1 makes every process
    compile the agent's sources) and with a bytecode cache (PYTHONPYCACHEPREFIX) for both."""
    with tempfile.TemporaryDirectory() as trial_dir, tempfile.TemporaryDirectory() as cache:
        for label, extra in (("as is", {}), ("bytecode cached", {"PYTHONPYCACHEPREFIX": cache})):
            times = {False: [], True: []}
            for i in range(runs + 1):
                for agent in ((False, True) if i % 2 == 0 else (True, False)):
                    env = dict(environment(agent, trial_dir), **extra)
                    if extra:
                        env.pop("PYTHONDONTWRITEBYTECODE", None)
                    start = time.perf_counter()
                    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
                    if i:  # the first run fills the cache
                        times[agent].append(time.perf_counter() - start)
            off, on = statistics.median(times[False]), statistics.median(times[True])
            print("startup, python -c pass x %d (%s%s): median %.1f ms without, %.1f ms with the agent "
                  "(%+.1f ms)" % (runs, label, ", PYTHONDONTWRITEBYTECODE=1" if not extra and
                                  os.environ.get("PYTHONDONTWRITEBYTECODE") else "",
                                  off * 1e3, on * 1e3, (on - off) * 1e3))


def bench_latency(requests=5):
    """A rank hung in all_reduce (its peer sleeps): signal to DDPBISECT_COLLECTIVES line."""
    hang = ROOT / "tests" / "python" / "workloads" / "hang_allreduce.py"
    with tempfile.TemporaryDirectory() as trial_dir:
        env = dict(environment(True, trial_dir), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                   WORLD_SIZE="2")
        logs = [open(os.path.join(trial_dir, "rank%d.log" % r), "w+") for r in range(2)]
        procs = [subprocess.Popen([sys.executable, str(hang)], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                                  stdout=logs[r], stderr=logs[r]) for r in range(2)]
        try:
            deadline = time.time() + 120
            while not all("READY" in open(f.name).read() for f in logs):
                if time.time() > deadline:
                    sys.exit("the hang workload did not start")
                time.sleep(0.1)
            time.sleep(1)  # rank 0 is in its second all_reduce by now
            latencies = []
            for _ in range(requests):
                before = open(logs[0].name).read().count("DDPBISECT_COLLECTIVES")
                sent = time.perf_counter()
                os.kill(procs[0].pid, STACK_SIGNAL)
                while open(logs[0].name).read().count("DDPBISECT_COLLECTIVES") == before:
                    if time.perf_counter() - sent > 10:
                        sys.exit("no trace line within 10 s")
                    time.sleep(0.0005)
                latencies.append(time.perf_counter() - sent)
                time.sleep(0.2)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    print("stack request, rank hung in all_reduce: signal to trace line median %.1f ms (max %.1f ms, %d requests)"
          % (statistics.median(latencies) * 1e3, max(latencies) * 1e3, requests))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--skip-latency", action="store_true")
    args = p.parse_args()
    import torch

    print("agent overhead, %s, torch %s" % (sys.executable, torch.__version__))
    bench_startup()
    bench_steps(args.steps, args.rounds)
    bench_toggle(args.steps * 2, max(2, args.rounds // 2))
    if not args.skip_latency:
        bench_latency()


if __name__ == "__main__":
    if os.environ.get("AGENT_BENCH_RANK"):
        rank_main()
    else:
        main()
