"""ddpbisect's in-process agent for Python ranks (docs/agent.md): stacks on request, heartbeats, a
collective trace, the training data set and the trial's part of it, a step limit.

sitecustomize calls start() in every Python process of a rank. Until the program imports torch the
agent only registers the stack-request signal and an import hook; the rest (trace, steps, data) is
patched into torch's own modules right after each is first imported. This file holds only what
every Python process of a rank runs at startup; the rest is in core, trace, steps and data."""
import faulthandler
import os
import sys

import _signal

ENV = os.environ
RANK_PID = "DDPBISECT_AGENT_RANK_PID"  # set by the process that became the rank; children inherit it


class State:
    role = "process"  # "process" until it turns "rank" (init_process_group / optimizer step) or "helper"
    signum = 0  # the stack-request signal, 0 when none
    steps = 0  # optimizer steps taken
    max_steps = 0  # DDPBISECT_MAX_STEPS, 0 = no limit
    samples_auto = False  # DDPBISECT_SAMPLES_AUTO=1
    user_heartbeats = False  # the script calls the helper's heartbeat(): the agent's stand down
    user_samples = False  # the script takes its samples from the helper: no restriction here
    watcher = False  # a thread answers stack requests (else the Python-level handler does)
    on_stack_request = None  # set by the trace once there is one to dump
    on_rank = []  # called once when this process becomes the rank
    last_loss = None  # the last CPU scalar backward() ran on
    rank = None  # the default group's rank, once init_process_group returned


state = State()


def start():
    if ENV.get("DDPBISECT_AGENT") != "1" or getattr(sys, "_ddpbisect_agent_started", False):
        return
    sys._ddpbisect_agent_started = True
    pid = ENV.get(RANK_PID)
    if pid and pid != str(os.getpid()):
        state.role = "helper"  # started by a rank: a DataLoader worker (spawn), a tool it runs
    state.max_steps = _int(ENV.get("DDPBISECT_MAX_STEPS"))
    state.samples_auto = ENV.get("DDPBISECT_SAMPLES_AUTO") == "1"
    _register_stack_signal(_int(ENV.get("DDPBISECT_STACK_SIGNAL")))
    os.register_at_fork(after_in_child=_after_fork)
    sys.meta_path.insert(0, _PostImport())


def restart_in_fork():
    """A rank forked from a warm-start server (warm.py) with the trial's environment in place:
    what start() read from the environment is read again. The patches into torch's modules were
    made when the server imported them and stay."""
    if ENV.get("DDPBISECT_AGENT") != "1":
        return
    state.role = "process"
    state.steps = 0
    state.rank = None
    state.max_steps = _int(ENV.get("DDPBISECT_MAX_STEPS"))
    state.samples_auto = ENV.get("DDPBISECT_SAMPLES_AUTO") == "1"
    activity = sys.modules.get("ddpbisect_agent.activity")
    if activity is not None:
        activity.restart_in_fork()
    signum = _int(ENV.get("DDPBISECT_STACK_SIGNAL"))
    if signum != state.signum:
        _register_stack_signal(signum)
    trace = sys.modules.get("ddpbisect_agent.trace")
    if trace is not None:
        trace.restart_in_fork()


def _int(text):
    try:
        return int(text) if text else 0
    except ValueError:
        return 0


_FATAL = {_signal.SIGSEGV, _signal.SIGFPE, _signal.SIGABRT, _signal.SIGBUS, _signal.SIGILL,
          _signal.SIGKILL, _signal.SIGSTOP}


def _register_stack_signal(signum):
    """faulthandler writes every thread's Python stack to stderr from its C handler (no GIL needed),
    then chains to a Python-level handler, whose C part wakes the trace's watcher thread."""
    if signum <= 0 or sys.stderr is None:
        return
    try:
        if signum in _FATAL:
            raise ValueError("faulthandler keeps it for fatal errors")
        _signal.signal(signum, _on_stack_signal)
        faulthandler.register(signum, file=sys.stderr, all_threads=state.role != "helper",
                              chain=True)
        state.signum = signum
        restart_syscalls()
    except (ValueError, OSError, RuntimeError) as e:
        from .core import write

        write(2, "ddpbisect agent: cannot answer stack requests on signal %d: %s\n" % (signum, e))
        return
    import atexit

    atexit.register(_ignore_stack_signal)


def _ignore_stack_signal():
    """From here on the interpreter tears down what a dump needs: a late request is ignored."""
    try:
        faulthandler.unregister(state.signum)
        _signal.signal(state.signum, _signal.SIG_IGN)
    except (ValueError, OSError, RuntimeError):
        pass


def restart_syscalls():
    """Asks the kernel to restart system calls the request interrupts (SA_RESTART): chaining
    faulthandler drops that flag, and C++ code (1.13's TCPStore) fails on EINTR. faulthandler
    re-registers itself without it after each request: the watcher calls this again."""
    try:
        _signal.siginterrupt(state.signum, False)
    except (ValueError, OSError, AttributeError):
        pass


def _on_stack_signal(signum, frame):
    # Runs only when the main thread next executes Python code; the watcher answers sooner.
    if not state.watcher:
        restart_syscalls()
        if state.on_stack_request is not None and state.role != "helper":
            state.on_stack_request("stack_request")


def _after_fork():
    if state.role == "rank":  # a DataLoader worker or another forked helper
        state.role = "helper"
        state.watcher = False
        try:
            _signal.set_wakeup_fd(-1)  # its signals must not wake the parent's watcher
            if state.signum:
                # Only the thread the signal lands on (its main thread, as a rule): dumping the
                # others reads their frames while they run, and a worker's queue-feeder threads
                # always run (3.11.2 crashed on that within a few hundred requests).
                faulthandler.register(state.signum, file=sys.stderr, all_threads=False, chain=True)
                restart_syscalls()
        except (ValueError, OSError, RuntimeError):
            pass


# The helper module (python/ddpbisect.py) calls these when the agent is loaded.
def on_helper_heartbeat():
    """The script reports its own steps: the agent's heartbeats stand down. Returns the seq to report."""
    state.user_heartbeats = True
    from . import trace

    return trace.current_seq()


def on_helper_samples(default, chosen):
    state.user_samples = True
    from . import data

    data.report_helper(default, chosen)


# What to patch, once each module has run: module name -> (our module, function).
_PATCHES = {
    "torch.distributed.distributed_c10d": ("trace", "patch_c10d"),
    "torch.distributed": ("trace", "patch_distributed"),
    "torch.nn.parallel.distributed": ("trace", "patch_ddp"),
    "torch.autograd": ("trace", "patch_autograd"),
    "torch.optim.optimizer": ("steps", "patch_optimizer"),
    "torch.utils.data.sampler": ("data", "patch_samplers"),
    "torch.utils.data.distributed": ("data", "patch_distributed_sampler"),
    "torch.utils.data.dataloader": ("data", "patch_dataloader"),
}


class _PostImport:
    """A meta-path finder that finds nothing itself: for the modules in _PATCHES it asks the other
    finders and arranges for our patch to run right after the module's own code."""

    def find_spec(self, name, path=None, target=None):
        if name not in _PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is not None and hasattr(loader, "exec_module"):
            exec_module = loader.exec_module

            def exec_then_patch(module):
                try:
                    exec_module(module)
                finally:
                    loader.__dict__.pop("exec_module", None)
                _patch(name, module)

            loader.exec_module = exec_then_patch  # this module's loader object only
        return spec

    def invalidate_caches(self):
        pass


def _patch(name, module):
    ours, fn = _PATCHES[name]
    try:
        mod = __import__("ddpbisect_agent." + ours, fromlist=[fn])
        getattr(mod, fn)(module)
    except Exception as e:
        from .core import write

        write(2, "ddpbisect agent: could not watch %s: %s: %s\n" % (name, type(e).__name__, e))
