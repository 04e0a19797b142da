// The whole reduction: escalate, reduce with passes until none makes progress, confirm, debug
// rerun. It returns what it found as a value; writing the reports is the caller's (report/).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "diagnose/diagnosis.hpp"
#include "reduce/oracle.hpp"
#include "reduce/result.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

struct ReductionOptions {
  std::string out_dir;  // must exist; holds journal.jsonl and trials/
  bool resume = false;
  int jobs = 1;
  std::string strategy = "default";
  std::optional<int64_t> max_trials;
  std::optional<Millis> max_time;
  int confirm_runs = -1;  // -1: 3 for a deterministic failure, 10 for a flaky one
  bool quiet = false;
  // --from-logs: chase exactly this failure (diagnosed from the user's own logs); escalation
  // skips stages that fail differently.
  std::optional<Signature> target;
  // Where the failure was seen (--stage, or the ranks in --from-logs): escalation starts there.
  std::string start_stage;
  int seen_world_size = 0;
  TrialRunner runner = run_trial;  // unit tests answer trials without processes
};

// Variables for one extra run of the minimal configuration that make the failure easier to read,
// best first: TORCH_DISTRIBUTED_DEBUG=DETAIL for hangs and collective mismatches (INFO when DETAIL
// fails differently), INFO for unused DDP parameters (it names them), CUDA_LAUNCH_BLOCKING=1 for
// CUDA errors, NCCL_DEBUG=INFO besides for NCCL errors. Empty when none applies (and for the
// built-in worker, which reads none). To move to the diagnosis's category table once it has one.
std::vector<Env> debug_variants(const Spec& spec, const std::string& category);

// Runs the reduction in options.out_dir (journal.jsonl, trials/). With options.resume, the
// journal's finished trials are replayed instead of rerun. Throws Interrupted (after every rank
// was stopped and the journal closed) when SIGINT or SIGTERM arrived.
ReductionResult run_reduction(const Spec& spec, const ReductionOptions& options);

}  // namespace ddpbisect
