// One function per subcommand; main.cpp only parses flags and dispatches here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect::cli {

// Shared by the subcommands: the spec, or nullopt after its errors were reported (cli/errors.hpp;
// the caller returns bad_input()).
std::optional<Spec> load_spec_or_report(const std::string& path);
// The trial configuration of `stage` (the last stage when empty, the first when `first`) with
// `--set` overrides applied; nullopt after reporting what was wrong (with the valid stages,
// keys, components or features, and a suggestion).
std::optional<TrialConfig> trial_config_or_report(const Spec& spec, const std::string& stage,
                                                  const std::vector<std::string>& sets,
                                                  bool first = false);

struct ValidateOptions {
  std::string spec;
  bool json = false;
};
int validate(const ValidateOptions& o);

struct ConfigOptions {
  std::string spec;
  std::string stage;  // default: the last (largest) stage
  std::vector<std::string> sets;
};
// Prints the DDPBISECT_CONFIG JSON of one trial: what `ddpbisect-worker --config` reads.
int config(const ConfigOptions& o);

struct RunOptions {
  std::string spec;
  std::string stage;  // default: the last (largest) stage
  std::vector<std::string> sets;
  std::string out;  // default: the spec's report.dir
  bool json = false;
};
// Runs exactly one trial; exit 0 pass, 1 fail, 125 infra, 2 bad input, 130 interrupted.
int run(const RunOptions& o);

struct ExplainOptions {
  std::vector<std::string> paths;
  bool json = false;
  std::vector<std::string> ignore_frames;
};
// Diagnoses existing logs; exit 0 when a failure was found, 3 when none, 2 on bad input.
int explain(const ExplainOptions& o);

struct ReduceCliOptions {
  std::string spec;
  std::string out;
  bool resume = false;
  std::string jobs;   // N or auto; empty: the spec's reduce.jobs
  std::string stage;  // the stage known to fail: escalation starts there
  std::string strategy;
  int64_t max_trials = 0;
  std::string max_time;
  int confirm = -1;
  bool quiet = false;
  std::string from_logs;
};
int reduce(const ReduceCliOptions& o);

struct CheckOptions {
  std::string spec;
  std::string expect = "fail";  // fail | pass
  int repeats = 1;
  std::string junit;
  bool bisect = false;
  std::string stage;  // default: the first stage
  std::string out;
};
// Reruns a repro spec; exit 0 when the expectation holds, 1 otherwise; --bisect: 0 good, 1 bad
// (the pinned signature reproduced), 125 skip (infra or a different failure).
int check(const CheckOptions& o);

struct DoctorCliOptions {
  std::string spec;
  bool json = false;
  std::string stage;
  std::string out;
  bool no_sanity = false;
  bool no_comm = false;
};
// Pre-flight checks: exit 0 when nothing failed, 1 otherwise, 2 bad input.
int doctor(const DoctorCliOptions& o);

}  // namespace ddpbisect::cli
