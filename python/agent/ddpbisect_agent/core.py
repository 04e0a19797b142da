"""What the agent's parts share once torch is in use: the rank's identity, its output lines."""
import os
import sys

from . import ENV, RANK_PID, _int, state


def become_rank():
    """This process is the rank: its children are helpers; failures dump the trace."""
    if state.role != "process":
        return
    state.role = "rank"
    pid = str(os.getpid())
    if ENV.get(RANK_PID) != pid:
        ENV[RANK_PID] = pid
    for fn in state.on_rank:
        fn()


_complained = set()


def internal_error(where, e):
    """An error in the agent's own code: one line per place, and the program goes on untouched."""
    if where not in _complained:
        _complained.add(where)
        write(2, "ddpbisect agent: internal error in %s: %s: %s\n" % (where, type(e).__name__, e))


def write(fd, text):
    """Writes whole lines straight to a file descriptor: no Python buffer, whatever sys.stdout is."""
    data = text.encode("utf-8", "replace")
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        except OSError:
            return
        data = data[n:]


def flush_stdio():
    """Flushes sys.stdout and sys.stderr before an os._exit (which skips the interpreter's own)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def emit(tag, obj, fd=2):
    import json

    write(fd, "%s %s\n" % (tag, json.dumps(obj, separators=(",", ":"))))


def rank():
    if state.rank is not None:
        return state.rank
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_initialized():
            return dist.get_rank()
    except Exception:
        pass
    return _int(ENV.get("RANK"))
