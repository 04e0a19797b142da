// Escalation: climb the stage ladder cheapest first; within a stage try a cheap variant (fewer
// steps, fewer samples) before the full configuration. The first failure sets the target.
#pragma once

#include <optional>

#include "reduce/oracle.hpp"

namespace ddpbisect {

struct Escalation {
  std::string stage;
  TrialConfig config;  // the first failing configuration
  RunRecord run;
  std::vector<std::pair<TrialConfig, std::string>> tried;  // every configuration and its status
};

Escalation escalate(const Spec& spec, Oracle& oracle, bool* found);

// The cheap variant of a stage's full configuration, or the same configuration when there is
// nothing to trim.
TrialConfig cheap_variant(const TrialConfig& full);

}  // namespace ddpbisect
