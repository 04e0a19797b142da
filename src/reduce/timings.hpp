// What the job's own trials taught about its pace, for the limits left `auto`: the least hang
// threshold (twice the longest pause with no progress that a trial showed and got over, so a
// job that evaluates or saves silently for a while is not taken for hung) and the trial timeout
// (four times the longest trial, at least a minute). Both only grow; the trial runner scales
// them further by the machine's load when each trial starts.
#pragma once

#include <optional>

#include "reduce/result.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

class JobTimings {
 public:
  void learn(const RunRecord& r);
  std::optional<double> hang_floor_s(const Limits& limits) const;
  std::optional<double> timeout_s(const Limits& limits) const;

 private:
  double pause_ = 0, longest_ = 0;
};

}  // namespace ddpbisect
