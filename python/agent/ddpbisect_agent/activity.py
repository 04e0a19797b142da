"""What a rank is doing, told to the driver's hang detector (docs/agent.md "Activity").

A quiet rank is not a hung one: it may be evaluating, saving, or tearing down. The driver counts
CPU time, output and I/O as progress; these lines tell it what it cannot see from outside:
- `collective`: the rank has been inside one traced call (a collective, a barrier, DDP's C++
  all-reduces under `ddp.backward`, `init_process_group`) since `since` (told once per call, after
  it has lasted a watcher period, so short calls cost nothing);
- `running`: it left the call it was told to be in;
- `finished`: it called `destroy_process_group()`: its distributed work is over;
- `exiting`: its main module returned (or `sys.exit`, or an uncaught exception: `error`), and the
  interpreter is tearing down (atexit hooks, thread joins): a slow exit, never a hang.
One line each, on stderr: `DDPBISECT_STATE {"rank","pid","role","state","t",...}`."""
import os
import sys
import threading
import time

from . import state
from .core import emit, rank

_told = None  # the event number told as `collective`, or None
_phase = "running"
_lock = threading.Lock()


def _tell(phase, **fields):
    global _phase
    _phase = phase
    line = {"rank": rank(), "pid": os.getpid(), "role": state.role, "state": phase,
            "t": round(time.time(), 3)}
    line.update(fields)
    emit("DDPBISECT_STATE", line)


def look(ring, now=None):
    """The watcher's look (every trace.WATCH_PERIOD): the newest call still open, if any."""
    global _told
    # A process becomes the rank once init_process_group returns: the call itself is told too.
    if state.role == "helper" or _phase in ("finished", "exiting"):
        return
    now = time.time() if now is None else now
    open_ev = None
    for ev in ring:
        if ev is not None and ev.state == "issued" and (open_ev is None or ev.i > open_ev.i):
            open_ev = ev
    with _lock:
        if _phase in ("finished", "exiting"):
            return
        if open_ev is not None and open_ev.i == _told:
            return
        if open_ev is not None and now - open_ev.t0 >= 0.4:
            _told = open_ev.i
            fields = {"op": open_ev.op, "since": round(open_ev.t0, 3)}
            if open_ev.seq is not None:
                fields["seq"] = open_ev.seq
            if open_ev.site is not None:
                fields["site"] = "%s:%d" % (open_ev.site[0], open_ev.site[1])
            _tell("collective", **fields)
        elif _told is not None:
            _told = None
            _tell("running")


def finished(why):
    with _lock:
        if _phase not in ("finished", "exiting") and state.role != "helper":
            _tell("finished", why=why)


def exiting():
    """threading's shutdown hook (before atexit handlers and thread joins), or atexit's."""
    with _lock:
        if _phase == "exiting" or state.role == "helper":
            return
        error = hasattr(sys, "last_value") or hasattr(sys, "last_exc")
        _tell("exiting", error=bool(error))


def watch_exit():
    """Called once per process at the agent's start: `exiting` as soon as the main module is done."""
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(exiting)
            return
    except RuntimeError:
        pass
    import atexit

    atexit.register(exiting)


def became_rank():
    """init_process_group returned: this process is a rank now. Said once, so that the driver
    knows the rank started even when none of its calls lasted long enough to be told (a warm
    start's first collectives take milliseconds) and it blocks before its first step."""
    with _lock:
        if _phase == "running" and _told is None:
            _tell("running")


def restart_in_fork():
    global _told, _phase
    _told, _phase = None, "running"
