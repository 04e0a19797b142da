// The normalized spec as JSON (the canonical form) and as YAML (for `validate` and repro.yaml).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spec/spec.hpp"

namespace ddpbisect {

nlohmann::json spec_to_json(const Spec& spec);
std::string json_to_yaml(const nlohmann::json& j);

}  // namespace ddpbisect
