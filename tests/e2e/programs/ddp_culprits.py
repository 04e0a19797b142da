"""Hangs whose culprit is one rank, for the live diagnosis tests. usage: ddp_culprits.py MODE

data_queue: every rank trains from a queue a loader thread fills; on rank 2 the loader stalls at
  step 3, so rank 2 waits in its queue while the others wait for it in all_reduce.
barrier_rank0: only rank 0 calls barrier() (in save_checkpoint, at step 2); rank 1 goes on to the
  next step's all_reduce.
"""
import queue
import sys
import threading
import time

import torch
import torch.distributed as dist


def heartbeat(rank, step):
    print('DDPBISECT_HEARTBEAT {"rank": %d, "step": %d, "t": %f}' % (rank, step, time.time()),
          flush=True)


def loader(rank, q):
    for step in range(1000):
        if rank == 2 and step == 3:
            threading.Event().wait()  # a stalled reader: never fills the queue again
        q.put(torch.full((4,), float(step)))


def next_batch(q):
    return q.get()


def save_checkpoint(step):
    dist.barrier()  # the bug: only rank 0 gets here


def main():
    mode = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    q = queue.Queue(maxsize=2)
    threading.Thread(target=loader, args=(rank, q), daemon=True).start()
    for step in range(8):  # a configuration without the bug passes in well under a second
        batch = next_batch(q) if mode == "data_queue" else torch.ones(4)
        dist.all_reduce(batch)
        if mode == "barrier_rank0" and rank == 0 and step == 2:
            save_checkpoint(step)
        heartbeat(rank, step)
        time.sleep(0.02)


if __name__ == "__main__":
    main()
