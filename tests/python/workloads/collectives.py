"""Every kind of torch.distributed call the trace records, then an uncaught exception (2 ranks).
The `# trace:` comments mark the lines the trace must name as call sites."""
import torch
import torch.distributed as dist


def exchange(rank):
    if rank == 0:
        dist.send(torch.ones(5, dtype=torch.int64), dst=1)  # trace:send
    else:
        dist.recv(torch.zeros(5, dtype=torch.int64), src=0)  # trace:recv


def main():
    dist.init_process_group("gloo")  # trace:init
    rank = dist.get_rank()
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    dist.all_reduce(t)  # trace:all_reduce
    dist.broadcast(t, src=0)  # trace:broadcast
    dist.barrier()  # trace:barrier
    objects = [None, None]
    dist.all_gather_object(objects, {"rank": rank})  # trace:all_gather_object
    out = [torch.zeros(2, 3) for _ in range(2)]
    dist.all_gather(out, t)  # trace:all_gather
    exchange(rank)
    work = dist.all_reduce(torch.ones(4, dtype=torch.float64), async_op=True)  # trace:async
    work.wait()
    sub = dist.new_group([0, 1])  # trace:new_group
    dist.all_reduce(torch.ones(1), group=sub)  # trace:subgroup
    raise RuntimeError("planted failure after the collectives")


if __name__ == "__main__":
    main()
