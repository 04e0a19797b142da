// `samples: auto` and `steps: auto` (command workloads with the agent, docs/agent.md): the first
// failing trial runs the whole job; its rank logs give the training data set's length (the
// agent's DDPBISECT_DATASET line) and the steps it ran (heartbeats), which become the samples and
// steps dimensions the passes reduce. An explicit sample count is checked against the length.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

// The workload does not fit the spec (a count beyond the data set, no data set found): an input
// error, exit 2, with a message to show as is.
class WorkloadInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Sets config's auto dimensions from the trial in `trial_dir` (its outcome.json and rank logs):
// samples 0..len-1 when `samples: auto` gave none; under `steps: auto`, params.steps = the steps
// up to the one the trial failed in (the furthest rank's last heartbeat step + 2: steps count
// from 0). A dimension the trial could not measure (no data set read before the failure) stays
// unreduced, and the returned notes say so. Throws WorkloadInputError when the workload
// contradicts the spec (a count beyond the data set, ranks reading different data sets).
std::vector<std::string> apply_auto_dimensions(const Spec& spec, const std::string& trial_dir,
                                               TrialConfig& config);

}  // namespace ddpbisect
