// The trainer's optional features (the spec's `features:`), each what a training script does around
// its steps: grad_accum (micro-batches per step), grad_clip (norm 1.0 before the optimizer), and
// after a step sync_bn (average BatchNorm statistics), param_checksum (replicas must agree), eval
// and checkpoint (every `eval_every` steps).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "spec/trial_config.hpp"
#include "worker/comm.hpp"
#include "worker/data.hpp"
#include "worker/model.hpp"

namespace ddpbisect::worker {

class Features {
 public:
  Features(const TrialConfig& trial, const RankEnv& env, const DataSet& data,
           const std::vector<int64_t>& shard);

  int64_t micro_batches() const { return micro_batches_; }
  void before_optimizer(std::vector<torch::Tensor>& params) const;
  void after_step(Net& net, std::vector<torch::Tensor>& params, Comm& comm, int64_t step) const;

 private:
  void sync_batchnorm(Net& net, Comm& comm) const;
  void check_replicas(const std::vector<torch::Tensor>& params, Comm& comm, int64_t step) const;
  void evaluate(Net& net, Comm& comm) const;
  void checkpoint(std::vector<torch::Tensor>& params, Comm& comm) const;

  const TrialConfig& trial_;
  const RankEnv& env_;
  const DataSet& data_;
  const std::vector<int64_t>& shard_;
  int64_t eval_every_ = 5, micro_batches_ = 1;
};

// The sum of every parameter, for comparing replicas.
double param_checksum(const std::vector<torch::Tensor>& params);

}  // namespace ddpbisect::worker
