// What a reduction hands back: plain values, no live Oracle. The reducer returns a
// ReductionResult; the CLI gives it to the report writers (report/), which read nothing else of
// reduce/. Also the records it is made of: one trial's answer, the statistics, the trace.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/vocabulary.hpp"
#include "diagnose/diagnosis.hpp"
#include "observe/outcome.hpp"
#include "reduce/reduction_statuses.def"
#include "spec/trial_config.hpp"

namespace ddpbisect {

// One trial's answer as the reducer sees it.
struct RunRecord {
  TrialStatus status = TrialStatus::Infra;  // pass, fail or infra; never interrupted
  std::optional<Signature> signature;
  std::string text;  // root-cause message and excerpt, for match.regex
  long long last_step = -1;
  std::string dir;
  int attempt = 0;  // which run of its configuration (the seed derives from it)
  bool replayed = false;
  // The job's own timings in this trial: how long it ran, its longest pause with no progress.
  double duration_s = 0, pause_s = 0;
  // Infra because the job never started (the launcher failed before any rank ran): the
  // trial's reason. No configuration of the job can change it.
  std::string not_started;
};

struct OracleStats {
  int64_t trials = 0, failed = 0, passed = 0, infra = 0, cached = 0, replayed = 0;
};

// One accepted reduction step.
struct TraceEntry {
  int64_t trial = 0;  // trials run when the step was accepted
  std::string pass;
  TrialConfig config;
};

// One trial of the output folder (earlier sessions' included, debug reruns not) as the reducer
// judged it: whether it failed the way the final target describes, by the match level and
// match.regex. The HTML trace draws these; no renderer judges a trial again.
struct TrialMark {
  TrialConfig config;
  TrialStatus status = TrialStatus::Infra;
  bool target = false;
};

// How a reduction ended, from reduce/reduction_statuses.def.
DDPBISECT_DECLARE_VOCABULARY(ReductionStatus, DDPBISECT_REDUCTION_STATUSES, parse_reduction_status)

struct ReductionResult {
  ReductionStatus status = ReductionStatus::NotReproduced;
  std::string strategy;
  std::string stage;     // where the failure was found
  TrialConfig job;       // the full job: the last stage, nothing reduced
  TrialConfig original;  // the first failing configuration
  TrialConfig minimal;
  RunRecord first_run, minimal_run;
  // Those two trials' outcome.json as they were written (null when missing): the renderers
  // draw them and read no trial file themselves.
  nlohmann::json first_outcome, minimal_outcome;
  Signature target;
  std::vector<TraceEntry> trace;
  std::vector<TrialMark> trials;                           // every trial, in the order they ran
  std::vector<std::pair<TrialConfig, std::string>> tried;  // escalation: each try and its status
  int confirm_runs = 0, confirm_failures = 0;
  int64_t reduction_trials = 0;
  int64_t escalation_trials = 0;  // escalation and the reproduction-rate reruns
  OracleStats stats;
  double elapsed_s = 0;
  double target_rate = 1.0;  // the first failure's measured reproduction rate
  int repeats = 1;           // trials per candidate that rate asks for
  // The minimal configuration rerun with debug variables (command workloads; see
  // debug_variants), kept only when it failed the same way (loosely); a rerun that failed
  // differently or passed is a note instead, never the explanation.
  std::map<std::string, std::string> debug_env;
  std::optional<RunRecord> debug_run;
  std::vector<std::string> debug_notes;
  std::vector<std::string> notes;  // what the reduction found worth saying beyond its answer
  // NotReproduced because the job never started: why (a trial's reason), for the CLI's line.
  std::string not_started;
};

}  // namespace ddpbisect
