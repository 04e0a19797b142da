// Planted faults: each fires when every one of its `requires` conditions holds on this rank, and
// then does what its kind names at the point of the step where that kind strikes. They are the
// ground truth that the reducer's tests and benchmarks stand on.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"
#include "worker/comm.hpp"
#include "worker/model.hpp"

namespace ddpbisect::worker {

struct RankPlace {
  int rank = 0, node = 0, world = 1;
};

class FaultPlan {
 public:
  FaultPlan(const std::vector<Fault>& faults, const TrialConfig& trial, const RankPlace& place,
            const std::vector<int64_t>& shard);

  // Conditions. Faults of `kind` whose conditions hold at `step` on this rank.
  std::vector<const Fault*> active(FaultKind kind, int64_t step) const;
  bool any(FaultKind kind, int64_t step) const { return !active(kind, step).empty(); }
  // Whether the spec plants a fault of this kind at all (on any rank).
  bool planted(FaultKind kind) const;
  // Why a fault does (or does not) fire here: one line per condition, for the worker's log.
  std::string explain(const Fault& f, int64_t step) const;

  // Effects. Before the step's first forward pass: stragglers slow down, components go unused, a
  // replica diverges, and the kinds that end or stop the rank fire.
  void before_step(int64_t step, Net& net, std::vector<torch::Tensor>& params);
  // On the model's output: a corrupt sample turns its row non-finite (`nan`).
  torch::Tensor corrupt_output(const torch::Tensor& out, const std::vector<int64_t>& batch,
                               int64_t step) const;
  // After the step's gradient reduction: a collective only some ranks call
  // (`collective_mismatch`), or one that ranks call with different sizes (`size_mismatch`).
  void after_reduction(Comm& comm, int64_t step) const;

 private:
  bool holds(const Fault& f, size_t index, int64_t step, std::string* why) const;
  const std::vector<Fault>& faults_;
  const TrialConfig& trial_;
  RankPlace place_;
  std::vector<int64_t> shard_;  // sorted
  Millis straggle_{0};          // a straggler, once slowed, stays slow
  bool diverged_ = false;
};

}  // namespace ddpbisect::worker
