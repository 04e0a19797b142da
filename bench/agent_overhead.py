"""What ddpbisect's in-process agent (docs/agent.md) costs, against no agent in the same run:
  - per training step: a 2-rank Gloo DDP loop (DistributedSampler + DataLoader, a small MLP of
    0.3 M parameters, batch 64, the loss all-reduced every step for logging), one job with the
    agent and one without, side by side and taking turns: each runs 10 steps while the other
    waits, the order swapping every turn (A B B A ...), so both meet the same load on a shared
    machine (other work on it moved step times by up to 50 % between jobs run one after the
    other). The first step after each wait is left out (both ranks wake at slightly different
    times), as are 20 warm-up steps. Reported per round (a fresh pair of jobs) and over all
    rounds: wall time, the main thread's CPU time and the whole process's CPU time per step, and
    the median over all turns of (with / without) of the two adjacent turns' medians. The agent
    traces every call (DDP's forward and backward, the all-reduce), writes its trace file and
    prints heartbeats into pipes this program drains, as the driver does. Target: <= 2 % per
    step. `--sequential` runs the jobs one after the other instead, as this bench used to.
  - then the same processes with the agent's recording switched on and off every 10 steps.
  - startup: `python3 -c pass` with and without the agent loaded by sitecustomize.
  - stack-request latency: from the signal to the DDPBISECT_COLLECTIVES line of a rank hung in
    all_reduce.
usage: python3 bench/agent_overhead.py [--steps N] [--rounds R] [--sequential] [--skip-latency]"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "python" / "agent"
STACK_SIGNAL = signal.SIGUSR2
TURN = 10  # steps a job runs before the other job's turn


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
    times, cpu, process, active, resumed = [], [], [], [], []
    agent = sys.modules.get("ddpbisect_agent") if os.environ.get("BENCH_TOGGLE") else None
    turns = [int(fd) for fd in os.environ["BENCH_TURNS"].split(",")] if os.environ.get("BENCH_TURNS") else None
    start, start_cpu, start_process = time.perf_counter(), time.thread_time(), time.process_time()
    for i, (x, y) in enumerate(train_loader):
        if agent is not None:  # both ranks switch together: recording on for 10 steps, off for 10
            agent.state.role = "rank" if (i // 10) % 2 == 0 else "helper"
            active.append(agent.state.role == "rank")
        if turns is not None:  # the other job's turn: say so, wait for ours
            resumed.append(i % TURN == 0)
            if i % TURN == 0:
                os.write(turns[1], b"r")
                if os.read(turns[0], 1) != b"g":
                    sys.exit("bench: the driver went away")
                start, start_cpu, start_process = time.perf_counter(), time.thread_time(), time.process_time()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        logged = loss.detach().clone()
        dist.all_reduce(logged)
        now, now_cpu, now_process = time.perf_counter(), time.thread_time(), time.process_time()
        times.append(now - start)
        cpu.append(now_cpu - start_cpu)
        process.append(now_process - start_process)
        start, start_cpu, start_process = now, now_cpu, now_process
    if turns is not None:
        os.close(turns[1])  # done: no more turns
    dist.barrier()
    if dist.get_rank() == 0:
        print("BENCH " + json.dumps({"wall": times[warmup:], "cpu": cpu[warmup:], "process": process[warmup:],
                                     "active": active[warmup:], "resumed": resumed[warmup:],
                                     "watcher": watcher_cpu()}), flush=True)
    dist.destroy_process_group()


def watcher_cpu():
    """CPU seconds the agent's watcher thread used in this process (None without one)."""
    for thread in threading.enumerate():
        if thread.name == "ddpbisect-agent" and thread.native_id:
            try:
                with open("/proc/self/task/%d/schedstat" % thread.native_id) as f:
                    return int(f.read().split()[0]) / 1e9  # ns on a CPU
            except (OSError, IndexError, ValueError):
                return None
    return None


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


def step_times(agents, steps, toggle=False, turns=False, attempts=3):
    """Step times of one 2-rank job per entry of `agents` (with the agent or not), run at once
    (taking turns with `turns`). A rank of either kind can die at exit on this machine ("terminate
    called without an active exception" from Gloo's threads, torch 2.13 too): then the jobs are
    run again, and said so."""
    for attempt in range(attempts):
        result = _jobs(agents, steps, toggle, turns)
        if isinstance(result, list):
            return result
        print("  (job failed, run again: %s)" % result)
    sys.exit("the job failed %d times" % attempts)


class _Rank:
    """One rank process; threads drain its stdout and stderr, as the driver's reader does."""

    def __init__(self, env, pass_fds=()):
        self.proc = subprocess.Popen([sys.executable, __file__], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, pass_fds=pass_fds)
        self.out, self.err = [], []
        self.readers = [threading.Thread(target=to.extend, args=(f,), daemon=True)
                        for f, to in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self.readers:
            t.start()

    def wait(self):
        try:
            self.proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for t in self.readers:
            t.join()
        return "".join(self.out), "".join(self.err)


def _jobs(agents, steps, toggle, turns):
    with tempfile.TemporaryDirectory() as trial_dir:
        jobs, ends = [], []
        for agent in agents:
            env = dict(environment(agent, trial_dir), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                       WORLD_SIZE="2", BENCH_STEPS=str(steps), AGENT_BENCH_RANK="1")
            if toggle:
                env["BENCH_TOGGLE"] = "1"
            ranks, pipes = [], []
            for r in range(2):
                renv, fds = dict(env, RANK=str(r), LOCAL_RANK=str(r)), ()
                if turns:
                    (go_r, go_w), (ready_r, ready_w) = os.pipe(), os.pipe()
                    fds = (go_r, ready_w)
                    renv["BENCH_TURNS"] = "%d,%d" % fds
                    pipes.append((go_w, ready_r))
                    ends += [go_w, ready_r]
                ranks.append(_Rank(renv, pass_fds=fds))
                for fd in fds:
                    os.close(fd)
            jobs.append((agent, ranks, pipes))
        try:
            if turns:
                _take_turns([pipes for _, _, pipes in jobs])
        except OSError as e:
            print("  (turns: %s)" % e)
        finally:
            for fd in ends:  # a rank still waiting for its turn reads EOF and exits
                os.close(fd)
            outs = [[rank.wait() for rank in ranks] for _, ranks, _ in jobs]
    results = []
    for (agent, ranks, _), job_outs in zip(jobs, outs):
        for rank, (out, err) in zip(ranks, job_outs):
            if rank.proc.returncode != 0:
                lines = [l for l in err.splitlines() if l.strip()]
                return "agent=%s: exit %d, %s" % (agent, rank.proc.returncode, lines[0] if lines else "no output")
        out = job_outs[0][0]
        line = next(l for l in out.splitlines() if l.startswith("BENCH "))
        beats = out.count("DDPBISECT_HEARTBEAT")
        if agent and not toggle and beats == 0:
            sys.exit("the agent printed %d heartbeats for %d steps" % (beats, steps))
        results.append(json.loads(line[6:]))
    return results


def _take_turns(jobs):
    """jobs: per job, its ranks' (go, ready) pipe ends. Each rank says "r" when it reaches a turn's
    start and then waits for "g"; a job whose ranks closed their ends instead has finished. The
    jobs run one at a time, the order swapping every turn."""
    def ready(pipes):
        return all([os.read(r, 1) == b"r" for _, r in pipes])  # every rank: no short-circuit

    running = [ready(pipes) for pipes in jobs]  # set up, waiting for the first turn
    turn = 0
    while any(running):
        for j in (range(len(jobs)) if turn % 2 == 0 else reversed(range(len(jobs)))):
            if running[j]:
                for go, _ in jobs[j]:
                    os.write(go, b"g")
                running[j] = ready(jobs[j])
        turn += 1


KINDS = (("wall", "per step"), ("cpu", "main-thread CPU per step"), ("process", "process CPU per step"))


def bench_steps(steps, rounds, sequential):
    """Per step, without and with the agent: wall time, the main thread's CPU time (less disturbed
    by other load on the machine) and the process's (the agent's watcher thread too)."""
    total = {(a, k): [] for a in (False, True) for k, _ in KINDS}
    pairs, watcher = [], []
    for r in range(rounds):
        if sequential:  # rounds alternate which runs first
            order = (False, True) if r % 2 == 0 else (True, False)
            results = dict(zip(order, [step_times([agent], steps)[0] for agent in order]))
        else:
            results = dict(zip((False, True), step_times([False, True], steps, turns=True)))
        medians = {}
        for agent, result in results.items():
            keep = [not x for x in result["resumed"]] if result["resumed"] else [True] * len(result["wall"])
            for kind, _ in KINDS:
                values = [v for v, k in zip(result[kind], keep) if k]
                total[agent, kind].extend(values)
                medians[agent, kind] = statistics.median(values)
        if not sequential:
            pairs.extend(_turn_ratios(results[False], results[True]))
        if results[True].get("watcher") is not None:  # over the process's life: an upper bound
            watcher.append(results[True]["watcher"] / len(results[True]["wall"]))
        print("round %d: median step %.3f ms without the agent, %.3f ms with it (%+.1f %%); CPU main "
              "thread %.3f / %.3f ms (%+.1f %%), process %.3f / %.3f ms (%+.1f %%)" % (
                  (r + 1,) + sum(((medians[False, k] * 1e3, medians[True, k] * 1e3,
                                   (medians[True, k] / medians[False, k] - 1) * 100) for k, _ in KINDS), ())))
    how = "one after the other" if sequential else "taking turns of %d steps" % TURN
    for kind, label in KINDS:
        off, on = statistics.median(total[False, kind]), statistics.median(total[True, kind])
        print("%s, %d steps x %d rounds (%s): %.3f ms without, %.3f ms with the agent: ratio %.3f "
              "(%+.1f %%, %+.0f us; target <= 2 %%)" % (label, steps, rounds, how, off * 1e3, on * 1e3,
                                                        on / off, (on / off - 1) * 100, (on - off) * 1e6))
    if pairs:
        q = statistics.quantiles(pairs, n=4)
        print("per step, adjacent turns (with / without, each a median of %d steps), %d pairs: median "
              "ratio %.3f (%+.1f %%), quartiles %.3f .. %.3f" % (TURN - 1, len(pairs), statistics.median(pairs),
                                                                 (statistics.median(pairs) - 1) * 100, q[0], q[2]))
    if watcher:
        print("the agent's watcher thread: at most %.1f us CPU per step (its whole life over the "
              "steps measured)" % (statistics.median(watcher) * 1e6))


def _turn_ratios(off, on):
    """(with / without) of the median wall step of each turn and of the other job's adjacent turn."""
    def turns(result):
        out, current = [], []
        for t, resumed in zip(result["wall"], result["resumed"]):
            if resumed:
                if current:
                    out.append(statistics.median(current))
                current = []
            else:
                current.append(t)
        if current:
            out.append(statistics.median(current))
        return out

    return [b / a for a, b in zip(turns(off), turns(on))]


def bench_toggle(steps, rounds):
    """The same two processes, the agent recording for 10 steps and passing through for the next
    10: the machine's load shifts far less within a run than between runs. What this leaves out
    (the calls through the agent's wrappers when it passes through, its thread) is in the A/B."""
    samples = {(a, k): [] for a in (False, True) for k in ("wall", "cpu")}
    for r in range(rounds):
        result = step_times([True], steps, toggle=True)[0]
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
    p.add_argument("--sequential", action="store_true", help="run the jobs one after the other")
    p.add_argument("--skip-latency", action="store_true")
    args = p.parse_args()
    import torch

    print("agent overhead, %s, torch %s" % (sys.executable, torch.__version__))
    bench_startup()
    bench_steps(args.steps, args.rounds, args.sequential)
    bench_toggle(args.steps * 2, max(2, args.rounds // 2))
    if not args.skip_latency:
        bench_latency()


if __name__ == "__main__":
    if os.environ.get("AGENT_BENCH_RANK"):
        rank_main()
    else:
        main()
