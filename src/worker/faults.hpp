// Planted faults: each fires when every one of its `requires` conditions holds on this rank.
// They are the ground truth that the reducer's tests and benchmarks stand on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect::worker {

struct RankPlace {
  int rank = 0, node = 0, world = 1;
};

class FaultPlan {
 public:
  FaultPlan(const std::vector<Fault>& faults, const TrialConfig& trial, const RankPlace& place,
            const std::vector<int64_t>& shard);

  // Faults of `kind` whose conditions hold at `step` on this rank.
  std::vector<const Fault*> active(const std::string& kind, int64_t step) const;
  bool any(const std::string& kind, int64_t step) const { return !active(kind, step).empty(); }
  // Whether the spec plants a fault of this kind at all (on any rank).
  bool planted(const std::string& kind) const;

  // Why a fault does (or does not) fire here: one line per condition, for the worker's log.
  std::string explain(const Fault& f, int64_t step) const;

 private:
  bool holds(const Fault& f, size_t index, int64_t step, std::string* why) const;
  const std::vector<Fault>& faults_;
  const TrialConfig& trial_;
  RankPlace place_;
  std::vector<int64_t> shard_;  // sorted
};

}  // namespace ddpbisect::worker
