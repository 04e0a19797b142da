// DistributedDataParallel in C++: what torch/nn/parallel/distributed.py (PyTorch 2.13) does at
// construction and around every forward pass, over c10d's own Reducer and Logger. Its defaults:
// find_unused_parameters=False, one bucket for the first iteration and then buckets rebuilt in
// gradient order (1 MiB first, 25 MiB after), gradients averaged over the world; as
// DDP(broadcast_buffers=False), buffers are synced at construction only. Errors are DDP's own.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "worker/comm.hpp"

namespace c10d {
class Reducer;
class Logger;
}  // namespace c10d

namespace ddpbisect::worker {

class DistributedDataParallel {
 public:
  // Checks that every rank's parameters have the same shapes, broadcasts rank 0's parameters and
  // buffers, assigns the buckets and builds the Reducer. `module` must have a parameter.
  DistributedDataParallel(torch::nn::Module& module, Comm& comm);
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // DDP's forward protocol, around the module's forward. `sync` is false for a micro-batch under
  // no_sync(): its gradients accumulate locally and the reducer ignores their hooks.
  // pre_forward raises DDP's error when the prior iteration's reduction never finished (a
  // parameter got no gradient), and rebuilds the buckets once, after the first iteration.
  void pre_forward(bool sync);
  void post_forward(bool sync);

 private:
  std::shared_ptr<c10d::Reducer> reducer_;
  std::shared_ptr<c10d::Logger> logger_;
};

}  // namespace ddpbisect::worker
