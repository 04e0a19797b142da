// The whole reduction: escalate, reduce with passes until none makes progress, confirm, report.
#pragma once

#include <optional>
#include <string>

#include "spec/spec.hpp"

namespace ddpbisect {

struct ReductionOptions {
  std::string out_dir;
  bool resume = false;
  int jobs = 1;
  std::string strategy = "default";
  std::optional<int64_t> max_trials;
  std::optional<Millis> max_time;
  int confirm_runs = -1;  // -1: 3 for a deterministic failure, 10 for a flaky one
  bool quiet = false;
};

// Returns the process exit code (0 minimal repro written, 3 not reproduced, 2 bad input).
int run_reduction(const Spec& spec, const ReductionOptions& options);

}  // namespace ddpbisect
