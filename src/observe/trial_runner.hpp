// Runs one trial: starts every rank through the launcher, captures their output, watches
// progress, harvests stacks of hung ranks, stops early once a rank has failed, reaps every
// process, and records it all in <dir>/outcome.json.
#pragma once

#include <functional>
#include <map>
#include <memory>
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
};

TrialOutcome run_trial(const TrialRequest& request);

// Creates <root>/trials/NNNN with the next free number (never reusing one) and returns it.
std::string next_trial_dir(const std::string& root);

}  // namespace ddpbisect
