"""What the agent's tests share: start the ranks of a job the way ddpbisect does (torchrun's
environment, the agent's variables, PYTHONPATH), read their logs, ask for stacks the way the driver
should (only processes that catch the signal, one at a time), and find leftover processes.

The interpreter is the one running the tests (`python3` on PATH: PyTorch 2.x in CTest's agent.python,
Debian's 1.13 in compat.agent.python)."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "python" / "agent"
HELPER = ROOT / "python"
WORKLOADS = Path(__file__).resolve().parent / "workloads"
PY = sys.executable
STACK_SIGNAL = signal.SIGUSR2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_version():
    out = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                         text=True, check=True)
    return tuple(int(x) for x in re.findall(r"\d+", out.stdout)[:2])


def agent_env(agent=True, pythonpath=(), **extra):
    """The environment ddpbisect gives a rank with the agent on (without torchrun's variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DDPBISECT_", "TORCHELASTIC"))}
    paths = ([str(AGENT)] if agent else []) + [str(p) for p in pythonpath]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PATH"] = os.path.dirname(PY) + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    if agent:
        env["DDPBISECT_AGENT"] = "1"
        env["DDPBISECT_STACK_SIGNAL"] = str(int(STACK_SIGNAL))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def signals_caught(pid):
    """The signal numbers a process has a handler for (/proc/PID/status SigCgt)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    mask = int(line.split()[1], 16)
                    return {n for n in range(1, 65) if mask & (1 << (n - 1))}
    except OSError:
        pass
    return set()


def children(pid):
    """Every descendant of pid, parents first."""
    kids = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        for k in sorted(kids.get(p, [])):
            out.append(k)
            todo.append(k)
    return out


def exe(pid):
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return ""


def agent_lines(text, tag):
    """The JSON objects of every `TAG {json}` line in a log."""
    out = []
    for line in text.splitlines():
        at = line.find(tag + " ")
        if at >= 0:
            out.append(json.loads(line[at + len(tag) + 1:]))
    return out


class Job:
    """The ranks of one trial: argv(rank) -> argv, each rank in its own session with its own logs."""

    def __init__(self, argv, world=2, env=None, cwd=None, agent=True, **extra):
        self.argv = argv if callable(argv) else (lambda rank: list(argv))
        self.world = world
        self.dir = Path(tempfile.mkdtemp(prefix="agent-test-"))
        self.token = uuid.uuid4().hex
        port = free_port()
        base = env if env is not None else agent_env(agent)
        base = dict(base, DDPBISECT_TRIAL_DIR=str(self.dir), DDPBISECT_TRIAL_TOKEN=self.token,
                    MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world),
                    LOCAL_WORLD_SIZE=str(world), GROUP_RANK="0", NODE_RANK="0")
        base.update({k: str(v) for k, v in extra.items()})
        self.procs = []
        for rank in range(world):
            e = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
            out = open(self.dir / ("rank%d.stdout" % rank), "w")
            err = open(self.dir / ("rank%d.stderr" % rank), "w")
            self.procs.append(subprocess.Popen(self.argv(rank), env=e, cwd=cwd or WORKLOADS,
                                               stdout=out, stderr=err, start_new_session=True))
            out.close()
            err.close()
        self.started = time.time()

    def out(self, rank):
        return (self.dir / ("rank%d.stdout" % rank)).read_text(errors="replace")

    def err(self, rank):
        return (self.dir / ("rank%d.stderr" % rank)).read_text(errors="replace")

    def log(self, rank):
        return self.out(rank) + self.err(rank)

    def wait(self, timeout=120):
        """Return codes of every rank; kills the job and fails after `timeout` seconds."""
        deadline = time.time() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError("job did not end in %ds:\n%s" % (timeout, self.tails()))
        return [p.returncode for p in self.procs]

    def wait_for(self, rank, pattern, timeout=60, stream="log"):
        """Waits until the rank's log matches `pattern` (a regex); returns the match."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(pattern, getattr(self, stream)(rank))
            if m:
                return m
            if all(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.02)
        raise AssertionError("rank %d never printed %r:\n%s" % (rank, pattern, self.tails()))

    def request_stacks(self, rank, sig=STACK_SIGNAL):
        """Like the driver should: signal, one after the other, every process of the rank that
        catches the signal; returns {pid: exe} of those signalled."""
        root = self.procs[rank].pid
        done = {}
        for pid in [root] + children(root):
            if int(sig) in signals_caught(pid):
                os.kill(pid, sig)
                done[pid] = exe(pid)
                time.sleep(0.2)
        return done

    def tails(self):
        return "\n".join("--- rank %d (%s)\n%s" % (r, self.procs[r].poll(), self.log(r)[-3000:])
                         for r in range(self.world))

    def leftovers(self):
        """Processes still carrying this job's token (as the driver's sweep finds them)."""
        found = []
        needle = ("DDPBISECT_TRIAL_TOKEN=" + self.token).encode()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    with open("/proc/%s/environ" % entry, "rb") as f:
                        if needle in f.read().split(b"\0"):
                            found.append(int(entry))
                except OSError:
                    pass
        return found

    def kill(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass

    def close(self):
        self.kill()
        subprocess.run(["rm", "-rf", str(self.dir)])


def run_python(code, env, timeout=60, args=()):
    return subprocess.run([PY] + list(args) + ["-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=tempfile.gettempdir())


class JobTest(unittest.TestCase):
    """A test case whose jobs are always cleaned up, leftovers counted."""

    def setUp(self):
        self.jobs = []

    def job(self, *args, **kwargs):
        j = Job(*args, **kwargs)
        self.jobs.append(j)
        return j

    def tearDown(self):
        for j in self.jobs:
            j.close()

    def assertNoLeftovers(self, job, grace=5.0):
        deadline = time.time() + grace
        while job.leftovers() and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(job.leftovers(), [], "processes left behind")


def trace_files(job):
    """{rank: (header, events)} from the agent's collective trace files of a job."""
    out = {}
    folder = job.dir / "agent"
    for path in sorted(folder.glob("collectives.*.jsonl")) if folder.is_dir() else []:
        header, events = None, []
        for line in path.read_text().splitlines():
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            if obj.get("kind") == "ddpbisect-collectives":
                header = obj
            else:
                events.append(obj)
        if header is not None:
            out[header["rank"]] = (header, sorted(events, key=lambda e: e["i"]))
    return out


def marked_lines(script):
    """{name: line number} of the `# trace:NAME` comments in a workload."""
    out = {}
    for n, line in enumerate((WORKLOADS / script).read_text().splitlines(), 1):
        m = re.search(r"# trace:(\w+)", line)
        if m:
            out[m.group(1)] = n
    return out
