// Escalation: climb the stage ladder cheapest first; within a stage try a cheap variant (fewer
// steps, fewer samples) before the full configuration. The first failure (that a pinned
// match.signature or --from-logs accepts) sets the target.
#pragma once

#include <optional>

#include "reduce/oracle.hpp"

namespace ddpbisect {

struct Escalation {
  bool found = false;  // a stage failed with the target (then stage, config and run are set)
  std::string stage;
  TrialConfig config;  // the first failing configuration
  RunRecord run;
  std::vector<std::pair<TrialConfig, std::string>> tried;  // every configuration and its status
};

// `wanted` (from --from-logs): only a failure that is the same as this one counts.
Escalation escalate(const Spec& spec, Oracle& oracle, const Signature* wanted = nullptr);

}  // namespace ddpbisect
