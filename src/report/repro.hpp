// The minimal spec: the original spec with the minimal configuration baked in, valid input for
// `ddpbisect` and `ddpbisect check`.
#pragma once

#include <string>

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

std::string minimal_spec_yaml(const Spec& spec, const TrialConfig& minimal,
                              const std::string& stage);

}  // namespace ddpbisect
