"""A rank that misbehaves on purpose, for the launch/observe tests. Needs no torch.

usage: misbehave.py MODE MARKER   (MARKER is only there so tests can find the process)
MODE: segv | sigkill | hang | grandchild | flood | ok
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
elif mode == "ok":
    heartbeat(1)
    sys.exit(0)
wait_here_forever()
