"""The collective trace, our own flight recorder for any backend (docs/agent.md).

torch.distributed's collectives, barriers and point-to-point calls, and marks around DDP's
construction, forward and backward (whose gradient all-reduces run inside C++), go into a ring of
RING events per rank. Each event is also written to its slot of a memory-mapped file under the
trial folder as it happens, so the file is current even when the rank is wedged with the GIL held,
killed, or dies on a fatal signal. The ring is printed as one DDPBISECT_COLLECTIVES line on stderr
on a stack request (by a watcher thread woken from the signal's C handler) and on an uncaught
exception."""
import atexit
import functools
import inspect
import itertools
import mmap
import os
import socket
import sys
import threading
import time

import _signal

from . import ENV, RANK_PID, activity, frames, restart_syscalls, state
from .frames import user_frame
from .core import become_rank, internal_error, rank, write

RING = 64
SLOT = 512  # bytes per event in the file, newline included
TAIL = 128  # the slot's last bytes before the newline: what changes when a call ends
HEADER = 4096

_OPS = (
    "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_coalesced",
    "all_gather_into_tensor", "_all_gather_base", "all_gather_object", "broadcast",
    "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor",
    "_reduce_scatter_base", "all_to_all", "all_to_all_single", "gather", "gather_object", "scatter",
    "scatter_object_list", "barrier", "monitored_barrier", "send", "recv", "isend", "irecv",
    "batch_isend_irecv", "send_object_list", "recv_object_list",
)
_P2P = frozenset(("send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list",
                  "recv_object_list"))


class Group:
    __slots__ = ("id", "pg", "name", "backend", "size", "ranks", "base", "own", "counts")


class Event:
    __slots__ = ("i", "op", "g", "seq", "seq_end", "peer", "info", "site", "state", "t0", "t1",
                 "work", "error", "head")


_c10d = None  # torch.distributed.distributed_c10d
_Tensor = None
_groups = {}  # id(pg) -> Group (holding pg, so the id is not reused)
_group_list = []
_ring = [None] * RING
_count = itertools.count()
_pending = []  # events whose async work was not seen completed yet
_local = threading.local()  # .busy: inside a traced call (nested calls are not traced)
_mirror = None
_ddp_group = None  # the group of a DDP forward run with grad, until its backward
_default = None  # the default group's Group while it exists
_stopped_state = "running"
_last_end = 0.0  # when the last traced call returned


# ---------------------------------------------------------------- groups and sequence numbers
def _resolve(pg):
    """Our Group for a process group (None: the default one); None when there is none."""
    if pg is None and _default is not None:
        return _default
    g = _groups.get(id(pg))
    if g is not None and g.pg is pg:
        return g
    try:
        if pg is None or pg is getattr(_c10d.GroupMember, "WORLD", None):
            pg = _c10d._get_default_group()
            g = _groups.get(id(pg))
            if g is not None and g.pg is pg:
                return g
        return _register(pg)
    except Exception:
        return None


def _register(pg):
    g = Group()
    g.id, g.pg, g.own, g.counts = len(_group_list), pg, 0, False
    g.name = g.backend = g.ranks = g.base = None
    g.size = 0
    try:
        g.base = pg._get_sequence_number_for_group()  # c10d's count; 1.13 starts it at random
    except Exception:
        pass
    try:
        g.size = pg.size()
        g.backend = str(_c10d.get_backend(pg))
    except Exception:
        pass
    for get_name in (lambda: pg.group_name, lambda: _c10d._get_process_group_name(pg),
                     lambda: _c10d._pg_names[pg]):
        try:
            g.name = str(get_name())
            break
        except Exception:
            pass
    try:
        ranks = _c10d.get_process_group_ranks(pg)
    except Exception:
        ranks = list(getattr(_c10d, "_pg_group_ranks", {}).get(pg, {}))
    if ranks and len(ranks) <= 64:
        g.ranks = sorted(int(r) for r in ranks)
    _groups[id(pg)] = g
    _group_list.append(g)
    _write_header()
    return g


def _seq(g):
    if g.base is not None:
        try:
            return g.pg._get_sequence_number_for_group() - g.base
        except Exception:
            g.base = None
    return g.own


def current_seq():
    """Collectives issued so far on the default group (heartbeats' `seq`), or None."""
    g = _default
    return None if g is None else _seq(g)


# ---------------------------------------------------------------- events
_time = time.time
_HEAD_MAX = SLOT - TAIL - 1  # the head's room in a slot
_ISSUED = '"seq_end":null,"state":"issued","t1":null}'.rjust(TAIL) + "\n"


def _begin(op, g, seq, info=None, peer=None):
    """Records a call as it starts: in the ring, and in its slot of the file. Runs for every traced
    call, so it does the least it can: what a call site's events share is formatted once."""
    if _pending:
        _sweep()
    i = next(_count)
    ev = _ring[i % RING]
    if ev is None or ev.state == "issued" or ev.state == "async":
        ev = Event()
    else:  # the event it replaces is reused (no new object for the collector), out of the ring
        _ring[i % RING] = None  # while it changes, so that a dump never shows it half written
    ev.i = i
    ev.op, ev.g, ev.seq, ev.peer, ev.info = op, g, seq, peer, info
    ev.seq_end = ev.t1 = ev.work = ev.error = None
    ev.state = "issued"
    site = ev.site = user_frame(3)
    t0 = ev.t0 = _time()
    template = _templates.get((op, g, seq is None, peer, info, site))
    if template is None:
        template = _template(ev)
    head = ev.head = template % ((i, t0) if seq is None else (i, seq, t0))
    _ring[i % RING] = ev
    mirror = _mirror
    if mirror:
        if len(head) <= _HEAD_MAX:  # ASCII: sites are JSON-escaped with \\u
            at = HEADER + (i % RING) * SLOT
            mirror[at : at + SLOT] = (head.ljust(_HEAD_MAX) + _ISSUED).encode()
        else:
            _write_event(ev)
    elif mirror is None and _open_mirror():
        _write_event(ev)
    return ev


def _end(ev, state_="completed"):
    global _last_end
    t1 = ev.t1 = _last_end = _time()
    ev.state = state_
    if _mirror:  # _write_tail(ev), inlined: this runs for every traced call
        if ev.error is None:
            data = ('"seq_end":%s,"state":"%s","t1":%.6f}' % (
                "null" if ev.seq_end is None else ev.seq_end, state_, t1)).rjust(TAIL).encode()
        else:
            data = _tail(ev).rjust(TAIL).encode()
        if len(data) == TAIL:
            at = HEADER + (ev.i % RING) * SLOT + _HEAD_MAX
            _mirror[at : at + TAIL] = data


def _sweep():
    now = time.time()
    for ev in list(_pending):
        works = ev.work if isinstance(ev.work, list) else [ev.work]
        try:
            done = all(w.is_completed() for w in works)
        except Exception:
            done = True
        if done or _ring[ev.i % RING] is not ev:
            _pending.remove(ev)
            ev.work = None
            if done and ev.state == "async":
                ev.state, ev.t1 = "completed", now
                if _mirror:
                    _write_tail(ev)


_templates = {}  # what a call site's events share -> head text with %d (i, seq) and %f (t0) left


def _template(ev):
    """The head of a call site's events: '{"i":%d,...,"t0":%.6f,' (the tail closes the object)."""
    parts = ['{"i":%%d,"op":"%s","pg":%d' % (ev.op, -1 if ev.g is None else ev.g.id)]
    if ev.seq is not None:
        parts.append(',"seq":%d')
    if ev.peer is not None:
        parts.append(',"peer":%d' % ev.peer)
    if ev.info:
        parts.append(',"shapes":%s,"dtypes":%s' % ev.info)
    if ev.site is not None:
        parts.append((',"site":"%s:%d","fn":"%s"' % ev.site).replace("%", "%%"))
    parts.append(',"t0":%.6f,')
    template = "".join(parts)
    if len(_templates) < 4096:
        _templates[ev.op, ev.g, ev.seq is None, ev.peer, ev.info, ev.site] = template
    return template


def _head(ev):
    """The fields fixed when the call starts: '{"i":..,...,' (the tail closes the object)."""
    template = _templates.get((ev.op, ev.g, ev.seq is None, ev.peer, ev.info, ev.site))
    if template is None:
        template = _template(ev)
    return template % ((ev.i, ev.t0) if ev.seq is None else (ev.i, ev.seq, ev.t0))


def _tail(ev):
    """The fields a call's end sets, then the closing brace."""
    tail = '"seq_end":%s,"state":"%s","t1":%s' % (
        "null" if ev.seq_end is None else ev.seq_end, ev.state,
        "null" if ev.t1 is None else "%.6f" % ev.t1)
    if ev.error is not None:
        tail += ',"error":"%s"' % ev.error[:40]
    return tail + "}"


def _event_json(ev):
    return ev.head + _tail(ev)


_dtype_names = {}
_infos = {}  # (shape, dtype) of a lone tensor argument -> its (shapes, dtypes) JSON text


def _tensor_info(args, kwargs):
    """JSON text (shapes, dtypes) of the first four tensors among the arguments, or None."""
    if len(args) == 1 and not kwargs:
        t = args[0]
        if type(t) is _Tensor or isinstance(t, _Tensor):
            key = (t.shape, t.dtype)
            info = _infos.get(key)
            if info is None:
                info = _infos_of([t])
                if len(_infos) < 1024:
                    _infos[key] = info
            return info
    found = []
    for a in args:
        _scan(a, found)
    if kwargs:
        for a in kwargs.values():
            _scan(a, found)
    return _infos_of(found) if found else None


def _infos_of(tensors):
    shapes, dtypes = [], []
    for t in tensors:
        shapes.append(str(list(t.shape)))
        d = t.dtype
        name = _dtype_names.get(d)
        if name is None:
            name = _dtype_names[d] = '"%s"' % str(d).replace("torch.", "")
        dtypes.append(name)
    return "[%s]" % ",".join(shapes), "[%s]" % ",".join(dtypes)


def _scan(a, found):
    if len(found) >= 4:
        return
    if isinstance(a, _Tensor):
        found.append(a)
    elif type(a) in (list, tuple):
        for t in a:
            if len(found) >= 4:
                return
            if isinstance(t, _Tensor):
                found.append(t)
            else:
                t = getattr(t, "tensor", None)  # P2POp
                if isinstance(t, _Tensor):
                    found.append(t)


def _wrap(op, fn):
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    group_at = params.index("group") if "group" in params else None
    peer_name = next((p for p in ("dst", "src") if p in params), None)
    peer_at = params.index(peer_name) if peer_name else None
    p2p = op in _P2P

    def issue(args, kwargs):
        if kwargs and "group" in kwargs:
            group = kwargs["group"]
        else:
            group = args[group_at] if group_at is not None and len(args) > group_at else None
        g = _default if group is None and _default is not None else _resolve(group)
        peer = None
        if peer_name is not None:
            peer = kwargs.get(peer_name) if peer_at >= len(args) else args[peer_at]
            if not isinstance(peer, int):
                peer = None
        elif op == "batch_isend_irecv" and args and args[0]:
            peer = getattr(args[0][0], "peer", None)
            if not isinstance(peer, int):
                peer = None
        if g is None:
            return _begin(op, None, None, _tensor_info(args, kwargs), peer)
        g.own += 1
        return _begin(op, g, _seq(g), _tensor_info(args, kwargs), peer)

    def finish(ev, out):
        if out is not None:
            works = out if isinstance(out, list) else [out]
            if works and all(hasattr(w, "is_completed") for w in works):
                ev.work = out
                _pending.append(ev)
                _end(ev, "async")
                return
        _end(ev)
        g = ev.g
        if g is not None and not g.counts and g.base is not None and not p2p:
            if _seq(g) == ev.seq:
                g.base = None  # this backend does not count: use our own count from now on
            else:
                g.counts = True  # it does: no need to look again

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        if state.role == "helper" or getattr(_local, "busy", False):
            return fn(*args, **kwargs)
        try:
            ev = issue(args, kwargs)
        except Exception as e:
            internal_error("trace." + op, e)
            return fn(*args, **kwargs)
        _local.busy = True
        try:
            out = fn(*args, **kwargs)
        except BaseException as e:
            _local.busy = False
            _failed(ev, e)
            raise
        _local.busy = False
        try:
            finish(ev, out)
        except Exception as e:
            internal_error("trace." + op, e)
        return out

    traced._ddpbisect_original = fn
    return traced


def _failed(ev, e):
    try:
        ev.error = type(e).__name__
        if ev.g is not None and ev.op.startswith("ddp."):
            ev.seq_end = _seq(ev.g)
        _end(ev, "failed")
    except Exception as err:
        internal_error("trace.failed", err)


def _wrap_lifecycle(op, fn):
    def after(ev, out, args, kwargs):
        global _default
        if op == "init_process_group":
            become_rank()
            ev.g = _default = _resolve(None)
            state.rank = _c10d.get_rank()
            _write_header()
        elif op == "destroy_process_group":
            group = args[0] if args else kwargs.get("group")
            if group is None or (_default is not None and group is _default.pg):
                _default = None
                state.rank = None
        elif op == "new_group" and out is not None and out is not getattr(
                _c10d.GroupMember, "NON_GROUP_MEMBER", None):
            _resolve(out)
        _end(ev)

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        if state.role == "helper":
            return fn(*args, **kwargs)
        try:
            g = None if op == "init_process_group" else _resolve(None)
            ev = _begin(op, g, None if g is None else _seq(g))
        except Exception as e:
            internal_error("trace." + op, e)
            return fn(*args, **kwargs)
        mask = None
        if op == "destroy_process_group":
            group = args[0] if args else kwargs.get("group")
            if group is None or (_default is not None and group is _default.pg):
                activity.finished(op)
        if op == "init_process_group":
            mask = _block_stack_signal()
            if state.role == "process":  # children started from now on are helpers; set before
                ENV[RANK_PID] = str(os.getpid())  # c10d's threads exist (setenv is not thread-safe)
        try:
            out = fn(*args, **kwargs)
        except BaseException as e:
            _failed(ev, e)
            raise
        finally:
            if mask is not None:
                _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
        try:
            after(ev, out, args, kwargs)
        except Exception as e:
            internal_error("trace." + op, e)
        return out

    traced._ddpbisect_original = fn
    return traced


def _block_stack_signal():
    """A signal landing in TCPStore's connect fails it ("Interrupted system call": an exception in
    torch 1.13, a warning and a retry in 2.x). While init_process_group runs, requests go to the
    watcher thread instead (faulthandler still dumps every thread; the main one is not "current")."""
    if not state.signum or not state.watcher:
        return None
    try:
        return _signal.pthread_sigmask(_signal.SIG_BLOCK, [state.signum])
    except (ValueError, OSError):
        return None


def patch_c10d(module):
    global _c10d, _Tensor
    _c10d = module
    _Tensor = sys.modules["torch"].Tensor
    for op in _OPS:
        fn = getattr(module, op, None)
        if callable(fn) and not hasattr(fn, "_ddpbisect_original"):
            setattr(module, op, _wrap(op, fn))
    for op in ("init_process_group", "new_group", "destroy_process_group"):
        fn = getattr(module, op, None)
        if callable(fn) and not hasattr(fn, "_ddpbisect_original"):
            setattr(module, op, _wrap_lifecycle(op, fn))
    state.on_stack_request = dump
    state.on_rank.append(_on_rank)
    activity.watch_exit()
    _start_watcher()  # now, in the main thread, before init_process_group can hang


def patch_distributed(module):
    """torch.distributed re-exports distributed_c10d's functions; make sure it has the traced ones."""
    if _c10d is None:
        return
    for op in _OPS + ("init_process_group", "new_group", "destroy_process_group"):
        ours = getattr(_c10d, op, None)
        theirs = getattr(module, op, None)
        if ours is not None and theirs is getattr(ours, "_ddpbisect_original", None):
            setattr(module, op, ours)


# ---------------------------------------------------------------- DDP marks
def _mark(op, g, fn, args, kwargs):
    try:
        ev = _begin(op, g, None if g is None else _seq(g))
    except Exception as e:
        internal_error("trace." + op, e)
        return fn(*args, **kwargs)
    try:
        out = fn(*args, **kwargs)
    except BaseException as e:
        _failed(ev, e)
        raise
    try:
        ev.seq_end = None if g is None else _seq(g)
        _end(ev)
    except Exception as e:
        internal_error("trace." + op, e)
    return out


def patch_ddp(module):
    ddp = module.DistributedDataParallel
    init, forward = ddp.__init__, ddp.forward
    is_grad_enabled = sys.modules["torch"].is_grad_enabled

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if state.role == "helper" or _c10d is None:
            return init(self, *args, **kwargs)
        g = _resolve(kwargs.get("process_group"))
        return _mark("ddp.init", g, init, (self,) + args, kwargs)

    @functools.wraps(forward)
    def ddp_forward(self, *args, **kwargs):
        global _ddp_group
        if state.role == "helper" or _c10d is None:
            return forward(self, *args, **kwargs)
        pg = getattr(self, "process_group", None)
        g = _groups.get(id(pg))
        if g is None or g.pg is not pg:
            g = _resolve(pg)
        out = _mark("ddp.forward", g, forward, (self,) + args, kwargs)
        if is_grad_enabled():
            _ddp_group = g
        return out

    ddp.__init__ = __init__
    ddp.forward = ddp_forward


def patch_autograd(module):
    backward = module.backward

    @functools.wraps(backward)
    def traced_backward(tensors, *args, **kwargs):
        global _ddp_group
        if state.role == "helper":
            return backward(tensors, *args, **kwargs)
        try:  # the loss, for heartbeats: a CPU scalar only (.item() on a GPU would synchronize)
            if tensors.is_cpu and tensors.numel() == 1:
                state.last_loss = tensors
        except Exception:
            pass
        g = _ddp_group
        if g is None:
            return backward(tensors, *args, **kwargs)
        _ddp_group = None
        return _mark("ddp.backward", g, backward, (tensors,) + args, kwargs)

    module.backward = traced_backward


# ---------------------------------------------------------------- the file
def _open_mirror():
    global _mirror
    folder = ENV.get("DDPBISECT_TRIAL_DIR")
    if not folder or not os.path.isdir(folder):
        _mirror = False
        return False
    try:
        folder = os.path.join(folder, "agent")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "collectives.%s.%d.jsonl" % (socket.gethostname(), os.getpid()))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            size = HEADER + RING * SLOT
            os.ftruncate(fd, size)
            mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        mm[:] = b" " * (HEADER - 1) + b"\n" + (b" " * (SLOT - 1) + b"\n") * RING
        _mirror = mm
        _write_header()
        return True
    except (OSError, ValueError) as e:
        write(2, "ddpbisect agent: no collective trace file: %s\n" % e)
        _mirror = False
        return False


def _write_event(ev):
    text = ev.head.ljust(SLOT - TAIL - 1) + _tail(ev).rjust(TAIL) + "\n"
    data = text.encode()
    if len(data) != SLOT:  # a long head (many shapes, a long path)
        ev.info = None
        ev.head = _head(ev)
        data = ev.head.encode()[: SLOT - TAIL - 1].ljust(SLOT - TAIL - 1) + _tail(ev).encode().rjust(TAIL) + b"\n"
        if len(data) != SLOT:
            return
    at = HEADER + (ev.i % RING) * SLOT
    _mirror[at : at + SLOT] = data


def _write_tail(ev):
    data = _tail(ev).rjust(TAIL).encode()
    if len(data) == TAIL:
        at = HEADER + (ev.i % RING) * SLOT + SLOT - TAIL - 1
        _mirror[at : at + TAIL] = data


def _header():
    import json

    return json.dumps({"kind": "ddpbisect-collectives", "version": 1, "rank": rank(),
                       "pid": os.getpid(), "host": socket.gethostname(), "slots": RING,
                       "state": _stopped_state, "t": round(time.time(), 6),
                       "groups": _groups_json(live=False)}, separators=(",", ":"))


def _write_header():
    if not _mirror:
        return
    data = _header().encode()[: HEADER - 1]
    _mirror[0:HEADER] = data.ljust(HEADER - 1) + b"\n"


def _groups_json(live):
    out = []
    for g in _group_list:
        d = {"id": g.id, "name": g.name, "backend": g.backend, "size": g.size}
        if g.ranks is not None:
            d["ranks"] = g.ranks
        if live:
            d["seq"] = _seq(g)
        out.append(d)
    return out


# ---------------------------------------------------------------- dumps
def dump(reason):
    """Prints the ring as one DDPBISECT_COLLECTIVES line on stderr (and refreshes the file)."""
    _flush_heartbeat()
    if _pending:
        _sweep()
    import json

    events = sorted((ev for ev in _ring if ev is not None), key=lambda ev: ev.i)
    head = json.dumps({"rank": rank(), "pid": os.getpid(), "reason": reason,
                       "t": round(time.time(), 6), "groups": _groups_json(live=True)},
                      separators=(",", ":"))
    total = events[-1].i + 1 if events else 0
    line = '%s,"dropped":%d,"events":[%s]}' % (head[:-1], total - len(events),
                                               ",".join(_event_json(ev) for ev in events))
    write(2, "DDPBISECT_COLLECTIVES %s\n" % line)
    _write_header()


WATCH_PERIOD = 0.5  # seconds between the watcher's looks at a held heartbeat
BEAT_AGE = 0.05  # a held heartbeat this old is printed by the watcher


def _watch(fd):
    """The watcher: answers stack requests at once, and prints a held heartbeat line when the main
    thread stopped stepping. It wakes every WATCH_PERIOD, not sooner: each wake-up takes the GIL
    from the main thread, and on a loaded machine handing it over and back cost the rank about
    0.7 ms of wall time (with 0.1 s: +40 us of main-thread CPU and +5 % wall time per 5 ms step,
    bench/agent_overhead.py)."""
    import select

    while True:
        try:
            ready = select.select([fd], [], [], WATCH_PERIOD)[0]
            data = os.read(fd, 256) if ready else b""
        except InterruptedError:
            continue
        except (OSError, ValueError):
            return
        if not ready:
            _flush_heartbeat(older_than=BEAT_AGE)
            try:
                activity.look(_ring)
            except Exception as e:
                internal_error("activity", e)
            continue
        if not data:
            return
        if state.signum in data:
            restart_syscalls()
        if state.signum in data and state.role != "helper" and any(_ring):
            try:
                dump("stack_request")
            except Exception as e:
                write(2, "ddpbisect agent: trace dump failed: %s\n" % e)


def _flush_heartbeat(older_than=0.0):
    steps = sys.modules.get("ddpbisect_agent.steps")
    if steps is not None and state.role == "rank":
        steps.flush(older_than)


def restart_in_fork():
    """A rank forked from the warm-start server: the server's watcher thread did not come along
    (fork keeps only the forking thread), though the state says it runs. Without it no held
    heartbeat is ever printed (the driver's step counts fall behind) and no stack request is
    answered while the main thread is blocked in C++: start this process's own."""
    if state.watcher:
        state.watcher = False
        try:
            old = _signal.set_wakeup_fd(-1)  # the server's pipe, whose reader is not here
            if old >= 0:
                os.close(old)
        except (ValueError, OSError):
            pass
    _start_watcher()


def _start_watcher():
    """Wakes on the stack-request signal through Python's wakeup fd (written by the signal's C
    handler, so it works while the main thread is blocked in C++)."""
    if state.watcher or not state.signum or threading.current_thread() is not threading.main_thread():
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        old = _signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        old = None
    if old != -1:  # the program has its own (asyncio): the Python-level handler answers instead
        if old is not None:
            _signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)
        return
    state.watcher = True
    threading.Thread(target=_watch, args=(r,), name="ddpbisect-agent", daemon=True).start()


def _on_rank():
    activity.became_rank()
    previous = sys.excepthook

    def excepthook(kind, value, tb):
        if state.role == "rank" and not issubclass(kind, KeyboardInterrupt):
            try:
                dump("exception")
            except Exception:
                pass
        previous(kind, value, tb)

    sys.excepthook = excepthook
    atexit.register(_at_exit)


def _at_exit():
    # torch 1.13's Gloo threads drop a finished collective's tensors a moment after it returns,
    # taking the GIL if Python still owns one; a thread that waits for the GIL while the
    # interpreter finalizes is ended by pthread_exit, through a noexcept C++ frame: std::terminate,
    # SIGABRT (a script that ends right after a collective died that way 1 time in 20 without the
    # agent, far more often with it). Giving up the GIL briefly lets them finish first.
    _flush_heartbeat()
    if time.time() - _last_end < 1.0:
        time.sleep(0.05)
    mark_state("exited")


def mark_state(what):
    """Records in the file's header how the rank ended ("exited", "stopped")."""
    global _stopped_state
    if state.role != "rank":
        return
    _stopped_state = what
    if _pending:
        _sweep()
    _write_header()
    if _mirror:
        try:
            _mirror.flush()
        except (OSError, ValueError):
            pass


def stop_barrier(timeout_s):
    """Waits until every rank of the default group arrived here (through the store, not a collective,
    so it cannot pair with a collective a rank still has in flight). False if that cannot be done."""
    if _c10d is None or not _c10d.is_initialized():
        return False
    try:
        world = _c10d.get_world_size()
        if world <= 1:
            return True
        store = _c10d._get_default_store()
    except Exception:
        return False
    import datetime

    key = "ddpbisect_agent/stop"
    if store.add(key + "/arrived", 1) >= world:
        store.set(key + "/go", "1")
    store.wait([key + "/go"], datetime.timedelta(seconds=timeout_s))
    store.add(key + "/left", 1)
    if _c10d.get_rank() == 0:  # usually hosts the store: the others must be done with it first
        deadline = time.time() + 10
        while store.add(key + "/left", 0) < world and time.time() < deadline:
            time.sleep(0.005)
    return True
