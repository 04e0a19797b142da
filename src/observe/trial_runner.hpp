// Runs one trial: starts every rank through the launcher, captures their output, watches
// progress, harvests stacks of hung ranks, stops early once a rank has failed, reaps every
// process, and records it all in <dir>/outcome.json.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

struct RankRecord {
  int rank = 0, local_rank = 0, node = 0;
  int pid = -1;
  std::vector<std::string> argv;
  double start_s = 0, end_s = -1;  // seconds since the trial started
  int exit_code = -1;              // when it exited
  int signal = 0;                  // when a signal ended it
  std::string killed_by;           // "", early_stop, hang, timeout, interrupt
  long long last_step = -1;
  long long heartbeats = 0;
  double last_progress_s = 0;
  std::vector<double> step_times;  // when each heartbeat arrived (the first 4096)
  std::string stdout_path, stderr_path;
  int64_t bytes = 0, dropped = 0;
  std::string stack;  // what the rank printed after the stack request (hang, early stop)
  bool failed() const { return killed_by.empty() && (signal != 0 || exit_code > 0); }
};

struct TrialOutcome {
  std::string dir;
  std::string status;  // pass | fail | infra | interrupted
  std::string reason;  // one line for humans
  TrialConfig config;
  std::string master_addr;
  std::string launcher;       // local | prefix | ssh | slurm
  std::string cleanup_notes;  // what the hosts' sweep reported, if anything
  int master_port = 0;
  std::string token;  // DDPBISECT_TRIAL_TOKEN: in every process of the trial's environment
  double started_unix = 0, duration_s = 0;
  double hang_threshold_s = 0;
  std::optional<double> hang_declared_s;
  std::optional<int> first_failure_rank;
  bool port_clash = false;
  bool log_cap_hit = false;
  std::vector<RankRecord> ranks;
  nlohmann::json diagnosis;  // filled by diagnose (issue #5)

  nlohmann::json to_json() const;
};

struct TrialRequest {
  const Spec* spec = nullptr;
  TrialConfig config;
  std::string dir;  // created by the runner; must not exist
  std::map<std::string, std::string> extra_env;
};

TrialOutcome run_trial(const TrialRequest& request);

// Creates <root>/trials/NNNN with the next free number (never reusing one) and returns it.
std::string next_trial_dir(const std::string& root);

}  // namespace ddpbisect
