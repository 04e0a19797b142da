"""A rank that misbehaves on purpose, for the launch/observe tests. Needs no torch.

usage: misbehave.py MODE MARKER   (MARKER is only there so tests can find the process)
MODE: segv | sigkill | hang | grandchild | flood | ok | forkbomb | memhog | longline | garbage
Rank 1 misbehaves in the last four; rank 0 waits (forkbomb, memhog) or exits 0.
"""
import json
import os
import signal
import sys
import time

mode, rank = sys.argv[1], int(os.environ["RANK"])


def heartbeat(step):
    print("DDPBISECT_HEARTBEAT " + json.dumps({"rank": rank, "step": step, "t": time.time()}), flush=True)


def wait_here_forever():
    while True:
        time.sleep(0.5)


heartbeat(0)
if mode == "segv" and rank == 1:
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGSEGV)
elif mode == "sigkill" and rank == 0:
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "grandchild":
    if os.fork() == 0:
        os.setsid()  # escape the rank's process group, as a daemonizing helper would
        if os.fork() == 0:
            wait_here_forever()
        os._exit(0)
    wait_here_forever()
elif mode == "flood":
    line = "x" * 1023
    for _ in range(40_000):  # ~40 MB per rank
        print(line)
    print("the last line of rank %d" % rank, file=sys.stderr, flush=True)
    sys.exit(0)
elif mode == "forkbomb" and rank == 1:
    # Forks without end; bounded at 2000 only so that a host without limits survives the test.
    for _ in range(2000):
        try:
            if os.fork() == 0:
                wait_here_forever()
        except OSError:  # EAGAIN: the pids limit; a bomb keeps trying
            time.sleep(0.01)
    wait_here_forever()
elif mode == "memhog" and rank == 1:
    hog = []
    for _ in range(32):  # 2 GB at most, 64 MB at a time, every page touched
        hog.append(bytearray(64 << 20))
        print("holding %d MB" % (64 * len(hog)), flush=True)
    wait_here_forever()
elif mode == "longline":
    if rank == 1:
        chunk = b"x" * (16 << 20)
        for _ in range(int(os.environ.get("LONGLINE_GB", "10")) * 64):  # 10 GB, no newline
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        print("\nthe end of rank 1", file=sys.stderr, flush=True)
    sys.exit(0)
elif mode == "garbage":
    if rank == 1:
        noise = open("/dev/urandom", "rb").read(8 << 20)
        for _ in range(8):  # 64 MB of binary noise on each stream
            sys.stdout.buffer.write(noise)
            sys.stderr.buffer.write(noise)
        sys.stdout.buffer.flush()
        sys.stderr.buffer.flush()
        print("\nValueError: after the noise", file=sys.stderr, flush=True)
        sys.exit(3)
    sys.exit(0)
elif mode == "ok":
    heartbeat(1)
    sys.exit(0)
wait_here_forever()
