// The worker's communication: TCPStore rendezvous at MASTER_ADDR:MASTER_PORT, a Gloo process
// group, and counted collectives (the count is the heartbeat's collective sequence number).
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
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
  int64_t seq() const { return seq_; }
  c10::intrusive_ptr<c10d::Backend> group() const { return pg_; }

  void allreduce(std::vector<torch::Tensor>& tensors, c10d::ReduceOp op = c10d::ReduceOp::SUM);
  void broadcast(std::vector<torch::Tensor>& tensors, int root = 0);
  void barrier();
  // Counts collectives issued elsewhere (the DDP reducer's bucket all-reduces).
  void count(int64_t n) { seq_ += n; }

 private:
  // Waits for `work` at most the collective timeout (Gloo here does not enforce it itself).
  void finish(const c10::intrusive_ptr<c10d::Work>& work, const char* op);
  int rank_, world_;
  int64_t seq_ = 0;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

}  // namespace ddpbisect::worker
