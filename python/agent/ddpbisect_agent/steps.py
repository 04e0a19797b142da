"""Optimizer steps: a heartbeat after each (docs/heartbeat.md) and, with DDPBISECT_MAX_STEPS, a clean
end of every rank after that many (`steps: auto`). A step is one optimizer.step() call of any
optimizer; torch 2 calls our global post hook, torch 1.13 the profiler's _optimizer_step_code."""
import math
import os
import sys
import time

from . import ENV, state, trace
from .core import become_rank, emit, rank, write


def patch_optimizer(module):
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is not None:
        register(on_step)
        return
    optimizer = module.Optimizer
    step_code = optimizer._optimizer_step_code

    def _optimizer_step_code(self):
        step_code(self)
        on_step(self)

    optimizer._optimizer_step_code = _optimizer_step_code


def on_step(optimizer, *unused):
    if state.role == "helper":
        return
    if state.role == "process":
        become_rank()
    state.steps += 1
    if state.steps == 1 and state.samples_auto:
        from . import data

        data.on_first_step()
    if not state.user_heartbeats:
        heartbeat()
    if state.max_steps and state.steps >= state.max_steps:
        stop()


def heartbeat():
    loss, state.last_loss = state.last_loss, None
    text = "null"
    if loss is not None:
        try:
            value = float(loss.item())
            if math.isfinite(value):
                text = repr(value)
        except Exception:
            pass
    seq = trace.current_seq()  # None without a process group
    write(1, 'DDPBISECT_HEARTBEAT {"rank":%d,"step":%d,"t":%.3f,"loss":%s,"seq":%s,"by":"agent"}\n'
          % (rank(), state.steps - 1, time.time(), text, "null" if seq is None else seq))


def stop():
    """Ends this rank after its last allowed step: every rank waits for the others (through the
    store), DataLoader workers go, then the process exits 0 without running the rest of the script."""
    emit("DDPBISECT_STOP", {"rank": rank(), "steps": state.steps, "reason": "max_steps"})
    timeout = float(ENV.get("DDPBISECT_STOP_TIMEOUT", "600"))
    try:
        trace.stop_barrier(timeout)
    except Exception as e:
        write(2, "ddpbisect agent: stop barrier: %s: %s\n" % (type(e).__name__, e))
    trace.mark_state("stopped")
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        try:
            for child in mp.active_children():
                child.terminate()
        except Exception:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(0)
