"""Warm starts (`workload.preload`, docs/agent.md): a fork server that imports the listed modules
once, then forks each rank of each trial from itself, so that a trial stops paying the import.

    python -m ddpbisect_agent.warm --socket NAME --preload MOD[,MOD...] [--log FILE]

The driver starts one per reduction on its host, with a trial's environment less the trial's
identity. NAME is an abstract Unix socket (SOCK_SEQPACKET). Each rank's command is
`ddpbisect-warm --socket NAME --child 0000000000 -- python SCRIPT ARGS` (src/warm): that stub runs
where the rank would (the trial's cgroup, its isolated view of the working folder) and sends:

    one message: cwd NUL argc NUL argv... NUL env-entry... NUL, with its stdin/stdout/stderr fds

This server answers on the same connection: "pid N", then "exit STATUS" (a waitpid status) when
the rank ends; the rank itself sends "ready" once it runs where the stub is, or "fail WHY", and the
stub then starts the command cold. A rank whose stub goes away is killed. The server is killed
with the driver (PR_SET_PDEATHSIG, set by the driver's launch code)."""
import os
import select
import signal
import socket
import struct
import sys
import traceback

SERVER_FILE = os.path.abspath(__file__)


def _fail(conn, why):
    try:
        conn.send(b"fail " + why.encode("utf-8", "replace"))
    except OSError:
        pass
    os._exit(0)


def _peer(conn):
    """(pid, uid, gid) of the process at the other end of a Unix socket."""
    return struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _parse_request(data, fds):
    parts = data.split(b"\0")
    if len(parts) < 3 or len(fds) != 3:
        raise ValueError("malformed request")
    cwd = os.fsdecode(parts[0])
    argc = int(parts[1])
    argv = [os.fsdecode(p) for p in parts[2:2 + argc]]
    env = {}
    for entry in parts[2 + argc:]:
        if not entry:
            continue
        key, sep, value = os.fsdecode(entry).partition("=")
        if sep:
            env[key] = value
    return cwd, argv, env


def _python_command(argv):
    """(kind, target, args) for `python [-u] SCRIPT ARGS` and `python [-u] -m MODULE ARGS`; None
    for anything else (-c, -X, -W, ...), which starts cold."""
    i = 1
    while i < len(argv) and argv[i] in ("-u", "-B"):
        i += 1
    if i >= len(argv):
        return None
    if argv[i] == "-m" and i + 1 < len(argv):
        return "module", argv[i + 1], argv[i + 2:]
    if argv[i].startswith("-"):
        return None
    return "script", argv[i], argv[i + 1:]


def _same_python(argv0, env):
    import shutil

    found = shutil.which(argv0, path=env.get("PATH", os.defpath)) if "/" not in argv0 else argv0
    return found is not None and os.path.realpath(found) == os.path.realpath(sys.executable)


# What may differ between the server and a rank: the trial's and the rank's identity, read when
# the script runs. Anything else (PYTHONPATH, OMP_NUM_THREADS, TORCH_* read when torch loads, a
# debug rerun's variables) makes the rank start cold.
_PER_RANK = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
             "NODE_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR",
             "MASTER_PORT", "TORCHELASTIC_RUN_ID",
             "CROSS_RANK", "CROSS_SIZE", "LOCAL_SIZE")  # deepspeed's launch.py's own


# Read when a process group or communicator is made, not at import: a debug rerun's variables.
# TORCH_DISTRIBUTED_DEBUG is read when torch.distributed loads: the rank reads it again.
_AT_RUNTIME = ("NCCL_", "TORCH_NCCL_", "TORCH_FR_")


def _per_rank(key):
    return (key.startswith("DDPBISECT_") or key in _PER_RANK or key.startswith(_AT_RUNTIME)
            or key == "TORCH_DISTRIBUTED_DEBUG")


def _reread_import_time_variables():
    dist = sys.modules.get("torch.distributed")
    if dist is not None and os.environ.get("TORCH_DISTRIBUTED_DEBUG") != _BEFORE_PRELOAD.get(
            "TORCH_DISTRIBUTED_DEBUG"):
        reread = getattr(dist, "set_debug_level_from_env", None)
        if reread is None:
            return "this torch cannot read TORCH_DISTRIBUTED_DEBUG again"
        reread()
    return None


_BEFORE_PRELOAD = {}  # the server's environment as it started (imports may add to it)


def _import_time_differences(env):
    ours = _BEFORE_PRELOAD
    keys = set(env) | set(ours)
    return sorted(k for k in keys if not _per_rank(k) and env.get(k) != ours.get(k))


def _join_cgroups(stub):
    """Joins the stub's cgroups (the trial's), v2 and v1, so that the trial's kill and limits
    cover this rank too."""
    with open("/proc/%d/cgroup" % stub) as f:
        lines = f.read().splitlines()
    with open("/proc/self/cgroup") as f:
        mine = set(f.read().splitlines())
    for line in lines:
        if line in mine:
            continue
        hid, controllers, path = line.split(":", 2)
        roots = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] if hid == "0" else [
            "/sys/fs/cgroup/" + c for c in controllers.split(",")] + ["/sys/fs/cgroup/" + controllers]
        for root in roots:
            procs = os.path.join(root + path, "cgroup.procs")
            if os.path.exists(procs):
                with open(procs, "w") as f:
                    f.write("0")
                break
        else:
            raise OSError("cannot join cgroup %s" % line)


def _join_namespaces(stub):
    """Enters the stub's namespaces where they differ from ours (its user namespace first, then
    its mount namespace: the trial's private view of the working folder)."""
    libc = _libc()
    for ns, flag in (("user", 0x10000000), ("mnt", 0x00020000), ("net", 0x40000000),
                     ("uts", 0x04000000), ("ipc", 0x08000000)):
        theirs = "/proc/%d/ns/%s" % (stub, ns)
        try:
            if os.stat(theirs).st_ino == os.stat("/proc/self/ns/" + ns).st_ino:
                continue
        except FileNotFoundError:
            continue
        fd = os.open(theirs, os.O_RDONLY)
        try:
            if libc.setns(fd, flag) != 0:
                import ctypes

                raise OSError(ctypes.get_errno(), "setns(%s)" % ns)
        finally:
            os.close(fd)
    if os.stat("/proc/%d/ns/pid" % stub).st_ino != os.stat("/proc/self/ns/pid").st_ino:
        raise OSError("the rank runs in another pid namespace")


def _become_rank(conn):
    """In the forked child: take the stub's place, then run its command; never returns."""
    try:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        stub = _peer(conn)[0]
        cwd, argv, env = _parse_request(data, fds)
        command = _python_command(argv)
        if command is None:
            _fail(conn, "not a `python SCRIPT` or `python -m MODULE` command")
        if not _same_python(argv[0], env):
            _fail(conn, "%s is not the server's %s" % (argv[0], sys.executable))
        differ = _import_time_differences(env)
        if differ:
            _fail(conn, "the environment differs from the server's in %s (read at import time)"
                  % ", ".join(differ[:5]))
        _join_cgroups(stub)
        _join_namespaces(stub)
        os.chdir(cwd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
    except Exception as e:
        _fail(conn, "%s: %s" % (type(e).__name__, e))
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    os.setpgid(0, 0)
    # The rank's environment, plus what the preloaded imports set (as they would have in it).
    added = {k: v for k, v in os.environ.items() if k not in _BEFORE_PRELOAD and k not in env}
    os.environ.clear()
    os.environ.update(env)
    os.environ.update(added)
    try:
        why = _reread_import_time_variables()
    except Exception as e:
        why = "%s: %s" % (type(e).__name__, e)
    if why:
        _fail(conn, why)
    try:
        conn.send(b"ready")
        conn.close()  # the server keeps its end; the script must not inherit ours
    except OSError:
        os._exit(1)
    _run(command)


def _run(command):
    kind, target, args = command
    import runpy

    agent = sys.modules.get("ddpbisect_agent")
    if agent is not None:
        agent.restart_in_fork()
    code = 0
    try:
        if kind == "script":
            sys.argv = [target] + args
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(os.path.abspath(target), run_name="__main__")
        else:
            sys.argv = [target] + args  # runpy puts the module's file there
            sys.path[0] = os.getcwd()
            runpy.run_module(target, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = _exit_code(e.code)
    except BaseException as e:
        _print_exception(e)
        code = 1
        if isinstance(e, KeyboardInterrupt):
            code = -signal.SIGINT
    _finish(code)


def _exit_code(value):
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        sys.stderr.write(str(value) + "\n")
    except Exception:
        pass
    return 1


def _print_exception(e):
    """The traceback a cold interpreter prints: from the script's own frame down (ours and runpy's
    frames above it dropped)."""
    tb = e.__traceback__
    ours = (SERVER_FILE, _runpy_file(), "<frozen runpy>")
    while tb is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    e.__traceback__ = tb  # hooks that print e.__traceback__ (torch's) see the same
    sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb  # as the interpreter sets
    try:
        sys.excepthook(type(e), e, tb)
    except Exception:
        traceback.print_exception(type(e), e, tb)


def _runpy_file():
    import runpy

    return runpy.__file__


def _finish(code):
    """What the interpreter does at exit: wait for non-daemon threads, run atexit, flush."""
    try:
        import threading

        threading._shutdown()
    except Exception:
        pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except Exception:
        pass
    from .core import flush_stdio

    flush_stdio()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def serve(name, modules):
    _BEFORE_PRELOAD.update(os.environ)
    for module in modules:
        try:
            __import__(module)
        except Exception as e:  # that module is imported by each rank, as without preload
            sys.stderr.write("ddpbisect-warm: cannot preload %s: %s: %s\n" % (module, type(e).__name__, e))
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "cuda", None) is not None and torch.cuda.is_initialized():
        sys.stderr.write("ddpbisect-warm: CUDA was initialised by the preload; cold starts\n")
        return 3
    sys.stdout.flush()
    sys.stderr.flush()
    # Bound once the imports are done: the driver waits for the name before the first trial,
    # so that no rank waits inside a trial (where waiting would look like a hang).
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(b"\0" + name.encode())
    listener.listen(64)
    pidfds = {}  # pidfd -> (pid, conn): a rank forked here, until it ends
    stubs = {}  # conn fd -> (pid, conn): its stub, until the stub goes away
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    uid = os.getuid()
    while True:
        for fd, events in poller.poll():
            if fd == listener.fileno():
                conn, _ = listener.accept()
                if _peer(conn)[1] != uid:
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for other in pidfds:
                        os.close(other)
                    for _, other in stubs.values():
                        other.close()
                    _become_rank(conn)
                try:
                    conn.send(b"pid %d" % pid)
                except OSError:
                    pass
                pidfd = os.pidfd_open(pid)
                pidfds[pidfd] = (pid, conn)
                poller.register(pidfd, select.POLLIN)
                # Only a hang-up is watched: the request is the rank's to read.
                stubs[conn.fileno()] = (pid, conn)
                poller.register(conn, select.POLLRDHUP)
            elif fd in pidfds:  # a rank ended: its stub gets the status
                pid, conn = pidfds.pop(fd)
                poller.unregister(fd)
                os.close(fd)
                _, status = os.waitpid(pid, 0)
                if stubs.pop(conn.fileno(), None) is not None:
                    poller.unregister(conn)
                    try:
                        conn.send(b"exit %d" % status)
                    except OSError:
                        pass
                conn.close()
            elif fd in stubs:  # the stub went away (killed with its trial): its rank goes too
                pid, conn = stubs.pop(fd)
                poller.unregister(fd)
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, signal.SIGKILL)
                    except OSError:
                        pass


def main(argv):
    name, modules = None, []
    i = 0
    while i < len(argv):
        if argv[i] == "--socket" and i + 1 < len(argv):
            name = argv[i + 1]
        elif argv[i] == "--log" and i + 1 < len(argv):
            log = os.open(argv[i + 1], os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
        elif argv[i] == "--preload" and i + 1 < len(argv):
            modules = [m for m in argv[i + 1].split(",") if m]
        else:
            sys.stderr.write("usage: python -m ddpbisect_agent.warm --socket NAME --preload MODS [--log FILE]\n")
            return 2
        i += 2
    if not name:
        sys.stderr.write("ddpbisect-warm: --socket is required\n")
        return 2
    return serve(name, modules)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
