#include "report/repro.hpp"

#include "spec/serialize.hpp"

namespace ddpbisect {

std::string minimal_spec_yaml(const Spec& spec, const TrialConfig& m, const std::string& stage) {
  nlohmann::json j = spec_to_json(spec);
  j["name"] = spec.name + "-minimal";
  j["stages"] = nlohmann::json::array({{{"name", stage},
                                        {"nodes", m.nodes},
                                        {"procs_per_node", m.procs_per_node},
                                        {"device", m.device}}});
  auto& w = j["workload"];
  std::string samples = m.samples.to_string();
  if (spec.builtin) {
    w["builtin"]["model"] = m.components;
    w["builtin"]["features"] = m.features;
    w["builtin"]["params"] = m.params;
    w["builtin"]["samples"] = samples;
  } else {
    w["samples"] = samples;
    w["components"] = m.components;
    w["features"] = m.features;
    w["params"] = m.params;
  }
  j["report"]["dir"] = "ddpbisect-check";
  return "# The minimal configuration found by ddpbisect for " + spec.file +
         ".\n# Rerun it with: ddpbisect check repro.yaml --expect fail\n" + json_to_yaml(j);
}

}  // namespace ddpbisect
