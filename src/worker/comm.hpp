// The worker's communication, set up as torch.distributed sets up a Gloo job: a TCPStore rendezvous
// at MASTER_ADDR:MASTER_PORT, c10d's ProcessGroupGloo registered as the CPU backend of a
// c10d::ProcessGroup, and collectives waited on with an enforced timeout. c10d's own count of the
// group's collectives (DDP's bucket all-reduces included) is the heartbeat's sequence number.
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <string>

namespace ddpbisect::worker {

struct RankEnv {
  int rank = 0, world_size = 1, local_rank = 0, local_world_size = 1, node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  static RankEnv from_environment();  // torchrun's variables; throws on malformed values
};

class Comm {
 public:
  Comm(const RankEnv& env, std::chrono::milliseconds timeout);
  int rank() const { return rank_; }
  int world() const { return world_; }
  // Collectives issued on this rank so far, as c10d counts them.
  int64_t seq() const { return static_cast<int64_t>(pg_->getSequenceNumberForGroup()); }
  const c10::intrusive_ptr<c10d::ProcessGroup>& group() const { return pg_; }

  void allreduce(std::vector<torch::Tensor>& tensors, c10d::ReduceOp op = c10d::ReduceOp::SUM);
  void barrier();

 private:
  // Waits for `work` at most the collective timeout, whatever the backend enforces itself.
  void finish(const c10::intrusive_ptr<c10d::Work>& work, const char* op);
  int rank_, world_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
};

}  // namespace ddpbisect::worker
