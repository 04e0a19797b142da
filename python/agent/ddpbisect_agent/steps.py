"""Optimizer steps: a heartbeat after each (docs/heartbeat.md) and, with DDPBISECT_MAX_STEPS, a clean
end of every rank after that many (`steps: auto`). A step is one optimizer.step() call of any
optimizer; torch 2 calls our global post hook, torch 1.13 the profiler's _optimizer_step_code."""
import math
import os
import sys
import threading
import time

from . import ENV, state, trace
from .core import become_rank, emit, flush_stdio, rank, write


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
    last = bool(state.max_steps) and state.steps >= state.max_steps
    if not state.user_heartbeats:
        heartbeat(force=last)
    if last:
        stop()


BEAT_INTERVAL = 0.25  # seconds; see heartbeat()
_pending = None  # the newest step not printed yet: (step, t, loss tensor or None, seq)
_printed = -1  # the newest step printed
_last_beat = 0.0
_lock = threading.Lock()


def heartbeat(force=False):
    """Prints this step's line, or keeps it when the last line went out less than BEAT_INTERVAL
    ago: a line is a write to a pipe the driver reads, and on a loaded machine waking that reader
    cost a rank far more than the agent's own work (0.7 ms a line measured here, against 5 ms
    steps). When the main thread stops stepping, the watcher prints the kept line at its next look
    (trace.WATCH_PERIOD), so every step shows within about 0.55 s, and the newest one always before
    a trace dump, at a stop and at exit. A kept step is only recorded (its values, not its text):
    most steps are never printed."""
    global _pending
    record = (state.steps - 1, time.time(), state.last_loss, trace.current_seq())
    state.last_loss = None
    now = time.monotonic()
    if force or not state.watcher or state.steps <= 3 or now - _last_beat >= BEAT_INTERVAL:
        _print(record, now)
    else:
        _pending = record  # one store: the watcher reads it under the GIL


def flush(older_than=0.0):
    """Prints the heartbeat line held back, if any, and if its step is `older_than` seconds old
    (the main thread stopped stepping: else its own next line comes soon enough)."""
    record = _pending
    if record is not None and record[0] > _printed and time.time() - record[1] >= older_than:
        _print(record, time.monotonic())


def _print(record, now):
    """Writes a step's line unless it or a later step's went out already: the main thread and the
    watcher both print, and neither clears `_pending` (a kept record is stale once printed)."""
    global _printed, _last_beat
    with _lock:
        if record[0] <= _printed:
            return
        _printed, _last_beat = record[0], now
        write(1, _line(record))


def _line(record):
    step, t, loss, seq = record
    text = "null"
    if loss is not None:
        try:
            value = float(loss.item())
            if math.isfinite(value):
                text = repr(value)
        except Exception:
            pass
    return 'DDPBISECT_HEARTBEAT {"rank":%d,"step":%d,"t":%.3f,"loss":%s,"seq":%s,"by":"agent"}\n' % (
        rank(), step, t, text, "null" if seq is None else seq)


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
    flush_stdio()
    os._exit(0)
