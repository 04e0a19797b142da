// One trial's configuration: the stage topology and the current value of every reducible
// dimension. The reducer edits it; the launcher hands it to ranks (DDPBISECT_CONFIG, placeholders).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/index_set.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

struct TrialConfig {
  std::string stage;
  int64_t nodes = 1;
  int64_t procs_per_node = 1;
  std::string device = "cpu";
  IndexSet samples;
  std::vector<std::string> components;  // kept, in model order
  std::vector<std::string> features;    // on
  std::map<std::string, int64_t> params;
  uint64_t seed = 0;  // per-trial randomness (flaky faults); 0 = derive from the configuration

  int64_t world_size() const { return nodes * procs_per_node; }
  bool has_component(const std::string& c) const;
  bool has_feature(const std::string& f) const;
  int64_t param(const std::string& name, int64_t fallback) const;

  nlohmann::json to_json() const;
  static TrialConfig from_json(const nlohmann::json& j);
  // A stable text key of every dimension (the reducer's cache key, before hashing).
  std::string canonical() const;
};

// Applies one `--set KEY=VALUE` override: samples=0-9,12; components=a,b; features=; nodes=2;
// procs_per_node=4; seed=7; steps=10 or params.steps=10. Returns an error message, or "".
std::string apply_override(TrialConfig& t, const std::string& assignment);

// The full configuration of the spec on one stage: nothing reduced yet.
TrialConfig initial_config(const Spec& spec, const Stage& stage);

// The cheap variant of a stage's full configuration (fewer steps, fewer samples), or the same
// configuration when there is nothing to trim: escalation and doctor's sanity run try it first.
TrialConfig cheap_variant(const TrialConfig& full);

// "2x1 ranks, 1 sample, 2 components, 0 features, steps=3" for progress lines and reports.
std::string describe_config(const TrialConfig& c);

// What ranks read from DDPBISECT_CONFIG: {"spec": normalized spec, "trial": TrialConfig}.
nlohmann::json rank_config_json(const Spec& spec, const TrialConfig& trial);

// rank_config_json read back (the worker's config.json): the spec through the same validating
// loader as any spec, then the trial. Never throws: a bad file yields `errors`, each naming `file`.
struct RankConfig {
  Spec spec;
  TrialConfig trial;
};
struct RankConfigRead {
  std::optional<RankConfig> config;  // set exactly when `errors` is empty
  std::vector<std::string> errors;
};
RankConfigRead read_rank_config(const std::string& text, const std::string& file);

}  // namespace ddpbisect
