// `ddpbisect config SPEC [--stage NAME] [--set KEY=VALUE]...`: one trial's rank configuration;
// and the helpers every subcommand shares to load a spec and pick a trial configuration.
#include <algorithm>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "common/exit_codes.hpp"
#include "common/json_util.hpp"
#include "common/text.hpp"
#include "spec/loader.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect::cli {

namespace {

// "; did you mean 'X'?" or "".
std::string hint(const std::string& word, const std::vector<std::string>& known) {
  std::string guess = suggest(word, known);
  return guess.empty() ? "" : "; did you mean '" + guess + "'?";
}

// What is wrong with one --set before it is applied: an unknown key, or a component or feature
// the spec does not have; "" when it may be applied.
std::string check_override(const TrialConfig& full, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) return "";  // apply_override says it
  std::string key = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  std::vector<std::string> params;
  for (const auto& [name, v] : full.params) params.push_back(name);
  std::vector<std::string> keys = {"samples", "components",     "features",
                                   "nodes",   "procs_per_node", "seed"};
  keys.insert(keys.end(), params.begin(), params.end());
  if (starts_with(key, "params.")) key = key.substr(7);
  if (std::find(keys.begin(), keys.end(), key) == keys.end())
    return "unknown key '" + key + "'" + hint(key, keys) + " (keys: samples, components, " +
           "features, nodes, procs_per_node, seed" +
           (params.empty() ? "" : "; params: " + join(params, ", ")) + ")";
  if (key == "components" || key == "features") {
    const auto& known = key == "components" ? full.components : full.features;
    for (auto& item : split(value, ',')) {
      std::string name(trim(item));
      if (!name.empty() && std::find(known.begin(), known.end(), name) == known.end())
        return key + ": '" + name + "' is not one of the spec's " + key + hint(name, known) + " (" +
               (known.empty() ? "none" : join(known, ", ")) + ")";
    }
  }
  return "";
}

}  // namespace

std::optional<Spec> load_spec_or_report(const std::string& path) {
  LoadResult r = load_spec_file(path);
  if (!r.spec) errors(r.errors, path);
  return r.spec;
}

std::optional<TrialConfig> trial_config_or_report(const Spec& spec, const std::string& stage_name,
                                                  const std::vector<std::string>& sets,
                                                  bool first) {
  const Stage* stage = !stage_name.empty() ? spec.find_stage(stage_name)
                       : first             ? &spec.stages.front()
                                           : &spec.stages.back();
  if (!stage) {
    std::vector<std::string> names;
    for (const auto& s : spec.stages) names.push_back(s.name);
    error("--stage: no stage named '" + stage_name + "' in " + spec.file + hint(stage_name, names) +
          " (stages: " + join(names, ", ") + ")");
    return std::nullopt;
  }
  TrialConfig t = initial_config(spec, *stage);
  const TrialConfig full = t;
  for (const auto& s : sets) {
    std::string err = check_override(full, s);
    if (err.empty()) err = apply_override(t, s);
    if (!err.empty()) {
      error("--set " + s + ": " + err);
      return std::nullopt;
    }
  }
  return t;
}

int config(const ConfigOptions& o) {
  auto spec = load_spec_or_report(o.spec);
  if (!spec) return bad_input();
  auto t = trial_config_or_report(*spec, o.stage, o.sets);
  if (!t) return bad_input();
  std::cout << json_text(rank_config_json(*spec, *t), 2) << "\n";
  return exit_code::kOk;
}

}  // namespace ddpbisect::cli
