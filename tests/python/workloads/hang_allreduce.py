"""Rank 0 waits in all_reduce for a peer that never comes: rank 1 sleeps in Python or, with --gil,
is deadlocked in a C call that keeps the GIL (so no other Python thread of it can ever run)."""
import ctypes
import sys
import threading
import time

import torch
import torch.distributed as dist


def report_progress():
    while True:
        time.sleep(0.05)


def main():
    dist.init_process_group("gloo")
    threading.Thread(target=report_progress, name="progress", daemon=True).start()
    t = torch.ones(16, 4)
    dist.all_reduce(t)  # every rank: this one completes
    print("READY rank=%d" % dist.get_rank(), flush=True)
    if dist.get_rank() == 0:
        wait_for_peer(t)
    elif "--gil" in sys.argv:
        libc = ctypes.PyDLL(None)  # PyDLL: the call keeps the GIL
        mutex = ctypes.create_string_buffer(64)  # zeroes: an unlocked default pthread mutex
        libc.pthread_mutex_lock(mutex)
        libc.pthread_mutex_lock(mutex)  # deadlock (signals do not interrupt it)
    else:
        time.sleep(120)


def wait_for_peer(t):
    dist.all_reduce(t * 2)


if __name__ == "__main__":
    main()
