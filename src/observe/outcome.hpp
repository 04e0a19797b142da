// A trial's outcome in memory: its typed status, every rank's record, and the diagnosis of a
// failed trial. JSON only at the edge: outcome.json (to_json) and the journal.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/vocabulary.hpp"
#include "diagnose/diagnosis.hpp"
#include "observe/stop_policy.hpp"
#include "observe/trial_statuses.def"
#include "spec/trial_config.hpp"

namespace ddpbisect {

// A trial's status, from observe/trial_statuses.def.
DDPBISECT_DECLARE_VOCABULARY(TrialStatus, DDPBISECT_TRIAL_STATUSES, parse_trial_status)

struct RankRecord {
  int rank = 0, local_rank = 0, node = 0;
  int pid = -1;
  std::vector<std::string> argv;
  double start_s = 0, end_s = -1;           // seconds since the trial started
  int exit_code = -1;                       // when it exited
  int signal = 0;                           // when a signal ended it
  StopReason killed_by = StopReason::None;  // set when ddpbisect stopped the rank
  long long last_step = -1;
  long long heartbeats = 0;
  double last_progress_s = 0;
  double finished_s = -1;  // when its agent said it finished training (destroy, exit), -1 never
  std::string blocked_in;  // where its process waited in the kernel when stacks were asked for
  std::vector<double> step_times;  // when each heartbeat arrived (the first 4096)
  std::string stdout_path, stderr_path;
  int64_t bytes = 0, dropped = 0;
  std::string stack;  // what the rank printed after the stack request (hang, early stop)
  bool failed() const { return killed_by == StopReason::None && (signal != 0 || exit_code > 0); }
};

// A trial stopped by a limit of the spec (limits.memory, limits.max_procs), not by its bug.
struct ResourceFault {
  std::string limit;   // "limits.memory" | "limits.max_procs"
  std::string detail;  // "(256MB): the kernel's OOM killer ended 1 process"
  int rank = -1;       // the rank it hit, when known
};

struct TrialOutcome {
  std::string dir;
  TrialStatus status = TrialStatus::Infra;
  int interrupt_signal = 0;            // status Interrupted: SIGINT or SIGTERM; 0 when cancelled
  std::string reason;                  // one line for humans
  StopReason stop = StopReason::None;  // what ended the trial, when ddpbisect did
  std::optional<ResourceFault> resource;
  TrialConfig config;
  std::string master_addr;
  std::string launcher;       // local | prefix | ssh | slurm
  std::string cleanup_notes;  // what the hosts' sweep reported, if anything
  std::string containment;    // the trial's cgroups, or how containment degraded here
  std::string stacks_by;      // how stacks were asked for: agent, py-spy, signal, joined by +
  std::vector<std::string> agent_logs;  // torchrun agents' own stderr (their banner, errors)
  int master_port = 0;
  std::string token;  // DDPBISECT_TRIAL_TOKEN: in every process of the trial's environment
  double started_unix = 0, duration_s = 0;
  double hang_threshold_s = 0;
  std::optional<double> hang_declared_s;   // a suspected hang: quiet for the threshold
  std::optional<double> hang_confirmed_s;  // ... that held (confirmation window, or matched)
  std::string hang_confirmed_by;           // "window" | "expected"
  // The job's own timings (the reducer learns hang_after/trial_timeout: auto from them).
  double first_step_s = -1, slowest_step_s = 0, longest_pause_s = 0;
  std::vector<std::string> notes;  // what a reader should know: a slow exit, a timeout ...
  // What the stacks of a hang showed: "stacks" (a rank's frames), "kernel" (programs that give
  // no stack, every one blocked in a system call), "" nothing: not judged a hang.
  std::string hang_evidence;
  // At the trial timeout: every rank still running had finished training (a slow exit), or some
  // rank was still making progress (the trial was too short to judge).
  bool timed_out_exiting = false, timed_out_progressing = false;
  std::optional<int> first_failure_rank;
  bool port_clash = false;
  bool log_cap_hit = false;
  bool not_started = false;  // infra: the launcher failed by itself before any rank ran
  std::vector<RankRecord> ranks;
  std::optional<Diagnosis> diagnosis;  // every failed trial is diagnosed as it ends

  // The signature of the diagnosed failure; nullptr when no failure was diagnosed.
  const Signature* failure() const {
    return diagnosis && diagnosis->failed ? &diagnosis->signature : nullptr;
  }
  nlohmann::json to_json() const;
};

// TRIAL_DIR/outcome.json as the trial runner wrote it, or null when it is missing or not a JSON
// object (a folder removed by hand, a trial still running).
nlohmann::json read_outcome_json(const std::string& trial_dir);

}  // namespace ddpbisect
