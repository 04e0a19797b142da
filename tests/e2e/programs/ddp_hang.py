"""A real Gloo hang: rank 1 skips an all_reduce that rank 0 enters, then waits on its own."""
import time

import torch
import torch.distributed as dist


def wait_for_a_signal_that_never_comes():
    while True:
        time.sleep(0.2)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(4)
    dist.all_reduce(t)
    print("DDPBISECT_HEARTBEAT {\"rank\": %d, \"step\": 0, \"t\": %f}" % (rank, time.time()), flush=True)
    if rank == 1:
        wait_for_a_signal_that_never_comes()
    dist.all_reduce(t)  # rank 0 blocks here forever
    print("unreachable", flush=True)


if __name__ == "__main__":
    main()
