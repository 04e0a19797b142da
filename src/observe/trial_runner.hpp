// Runs one trial: starts every rank through the launcher, captures their output, watches
// progress, harvests stacks of hung ranks, stops early once a rank has failed, reaps every
// process, and records it all in <dir>/outcome.json.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "launch/launcher.hpp"
#include "observe/outcome.hpp"
#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

struct TrialRequest {
  const Spec* spec = nullptr;
  TrialConfig config;
  std::string dir;  // created by the runner; must not exist
  std::map<std::string, std::string> extra_env;
  // Built once per reduction and shared by its trials; null: the runner makes the spec's own.
  std::shared_ptr<const Launcher> launcher = nullptr;
  // Polled while the ranks run: true stops the trial (every rank killed and reaped) and it
  // returns Interrupted with interrupt_signal 0. The reducer cancels speculative trials with it.
  std::function<bool()> cancelled = nullptr;
  // Learned from the job's earlier trials by the reducer (unset: from the spec): the least hang
  // threshold (limits.hang_after: auto) and the trial timeout (limits.trial_timeout: auto).
  std::optional<double> hang_floor_s = std::nullopt, timeout_s = std::nullopt;
  // When a suspected hang's sampled stacks already read as a failure this accepts (the target
  // being reduced), the hang is confirmed then, without waiting out the confirmation window.
  std::function<bool(const Diagnosis&)> expected_hang = nullptr;
};

TrialOutcome run_trial(const TrialRequest& request);

// Creates <root>/trials/NNNN with the next free number (never reusing one) and returns it.
std::string next_trial_dir(const std::string& root);

}  // namespace ddpbisect
