// Escalation: climb the stage ladder cheapest first, from the stage where the failure was seen
// when that is known (--from-logs, --stage); within a stage a cheap variant (fewer steps, fewer
// samples) comes before the full configuration when it at least halves the work. The first
// failure (that a pinned match.signature or --from-logs accepts) proposes the target, and it
// stands only once the user's own job (the last stage at full size) is seen to fail that way: a
// failure the cheaper configuration itself causes (a world-size check) is not the job's bug, so
// the climb goes on for the job's own failure, and a job that passes has nothing to reduce.
#pragma once

#include <optional>

#include "reduce/oracle.hpp"

namespace ddpbisect {

struct EscalationOptions {
  // --from-logs: only a failure that is the same as this one counts.
  const Signature* wanted = nullptr;
  // Where the failure was seen: stages below it are not climbed.
  std::string start_stage;  // a stage name (--stage)
  int seen_world_size = 0;  // ranks in the user's logs: the first stage with at least as many
};

struct Escalation {
  bool found = false;  // a stage failed with the target (then stage, config and run are set)
  std::string stage;
  TrialConfig config;  // the first failing configuration
  RunRecord run;
  std::vector<std::pair<TrialConfig, std::string>> tried;  // every configuration and its status
  std::vector<std::string> notes;  // what the climb found worth saying (a stage not the job's)
  // Not found because the job never started: the launcher failed by itself before any rank ran,
  // in the first configuration's every try (the trial's reason). The climb stops there.
  std::string not_started;
};

Escalation escalate(const Spec& spec, Oracle& oracle, const EscalationOptions& options = {});

// Whether escalation tries `cheap` before `full`: only when it cuts the steps or the samples at
// least in half (a trial's start-up is paid either way; a smaller cut cannot save a trial).
bool worth_a_cheap_trial(const TrialConfig& cheap, const TrialConfig& full);

// The index in spec.stages where escalation starts.
size_t first_stage(const Spec& spec, const EscalationOptions& options);

}  // namespace ddpbisect
