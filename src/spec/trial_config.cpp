#include "spec/trial_config.hpp"

#include <algorithm>

#include "common/json_util.hpp"
#include "common/text.hpp"
#include "spec/loader.hpp"
#include "spec/serialize.hpp"

namespace ddpbisect {

using nlohmann::json;

bool TrialConfig::has_component(const std::string& c) const {
  return std::find(components.begin(), components.end(), c) != components.end();
}

bool TrialConfig::has_feature(const std::string& f) const {
  return std::find(features.begin(), features.end(), f) != features.end();
}

int64_t TrialConfig::param(const std::string& name, int64_t fallback) const {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

json TrialConfig::to_json() const {
  return {{"stage", stage},
          {"nodes", nodes},
          {"procs_per_node", procs_per_node},
          {"world_size", world_size()},
          {"device", device},
          {"samples", samples.to_string()},
          {"sample_count", samples.size()},
          {"components", components},
          {"features", features},
          {"params", params},
          {"seed", seed}};
}

// Every field checked (a journal or config.json may be torn or edited): a missing one takes its
// default, one of another type throws std::runtime_error naming it.
TrialConfig TrialConfig::from_json(const json& j) {
  if (!j.is_object()) throw std::runtime_error("trial: expected an object");
  TrialConfig t;
  t.stage = json_strict(j, "stage", "");
  t.nodes = json_strict<int64_t>(j, "nodes", 1);
  t.procs_per_node = json_strict<int64_t>(j, "procs_per_node", 1);
  t.device = json_strict(j, "device", "cpu");
  std::string err;
  auto s = IndexSet::parse(json_strict(j, "samples", ""), &err);
  if (!s) throw std::runtime_error("trial.samples: " + err);
  t.samples = *s;
  t.components = json_strict(j, "components", std::vector<std::string>{});
  t.features = json_strict(j, "features", std::vector<std::string>{});
  const json& params = json_member(j, "params");
  if (!params.is_null() && !params.is_object())
    throw std::runtime_error("params: expected an object");
  for (const auto& [k, v] : params.items()) t.params[k] = json_strict<int64_t>(params, k, 0);
  t.seed = json_strict<uint64_t>(j, "seed", 0);
  return t;
}

std::string TrialConfig::canonical() const {
  std::string out = "nodes=" + std::to_string(nodes) + ";ppn=" + std::to_string(procs_per_node) +
                    ";device=" + device + ";samples=" + samples.to_string() +
                    ";components=" + join(components, ",") + ";features=" + join(features, ",");
  for (const auto& [k, v] : params) out += ";" + k + "=" + std::to_string(v);
  return out;
}

std::string apply_override(TrialConfig& t, const std::string& assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) return "expected KEY=VALUE, found '" + assignment + "'";
  std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  auto list = [&] {
    std::vector<std::string> out;
    for (auto& item : split(value, ','))
      if (!trim(item).empty()) out.emplace_back(trim(item));
    return out;
  };
  auto integer = [&](int64_t min, int64_t& out) -> std::string {
    try {
      size_t used = 0;
      long long v = std::stoll(value, &used);
      if (used != value.size() || v < min) throw std::invalid_argument(value);
      out = v;
      return "";
    } catch (const std::exception&) {
      return key + ": expected an integer >= " + std::to_string(min) + ", found '" + value + "'";
    }
  };
  if (key == "samples") {
    std::string err;
    auto s = IndexSet::parse(value, &err);
    if (!s) return "samples: " + err;
    t.samples = *s;
    return "";
  }
  if (key == "components") {
    t.components = list();
    return "";
  }
  if (key == "features") {
    t.features = list();
    return "";
  }
  if (key == "nodes") return integer(1, t.nodes);
  if (key == "procs_per_node") return integer(1, t.procs_per_node);
  if (key == "seed") {
    int64_t v = 0;
    std::string err = integer(0, v);
    t.seed = static_cast<uint64_t>(v);
    return err;
  }
  std::string name = starts_with(key, "params.") ? key.substr(7) : key;
  if (!t.params.count(name))
    return "unknown key '" + key +
           "' (samples, components, features, nodes, procs_per_node, seed, or a param)";
  return integer(0, t.params[name]);
}

TrialConfig initial_config(const Spec& spec, const Stage& stage) {
  TrialConfig t;
  t.stage = stage.name;
  t.nodes = stage.nodes;
  t.procs_per_node = stage.procs_per_node;
  t.device = stage.device;
  if (spec.builtin) {
    const auto& b = *spec.builtin;
    t.samples = b.samples ? *b.samples : IndexSet::first_n(b.dataset.samples);
    t.components = b.model;
    t.features = b.features;
    t.params = b.params;
  } else if (spec.command) {
    const auto& c = *spec.command;
    t.samples = c.samples;
    t.components = c.components;
    t.features = c.features;
    t.params = c.params;
  }
  return t;
}

json rank_config_json(const Spec& spec, const TrialConfig& trial) {
  return {{"spec", spec_to_json(spec)}, {"trial", trial.to_json()}};
}

TrialConfig cheap_variant(const TrialConfig& full) {
  TrialConfig c = full;
  if (auto it = c.params.find("steps"); it != c.params.end() && it->second > 8)
    it->second = std::max<int64_t>(8, it->second / 4);
  // At most a quarter of the samples (as the README says), where there are enough to cut.
  if (c.samples.size() > 256) c.samples = c.samples.prefix(c.samples.size() / 4);
  return c;
}

std::string describe_config(const TrialConfig& c) {
  // "1 rank", "2 ranks", "2 nodes x 2 ranks"
  std::string ranks = c.nodes > 1
                          ? plural(c.nodes, "node") + " x " + plural(c.procs_per_node, "rank")
                          : plural(c.world_size(), "rank");
  std::string s =
      ranks + ", " +
      // No indices: the workload's whole data set (a command without a samples
      // dimension, or samples: auto before the first trial measured it).
      (c.samples.empty() ? std::string("all samples") : plural(c.samples.size(), "sample")) + ", " +
      plural(static_cast<int64_t>(c.components.size()), "component") + ", " +
      plural(static_cast<int64_t>(c.features.size()), "feature");
  for (const auto& [k, v] : c.params) s += ", " + k + "=" + std::to_string(v);
  return s;
}

RankConfigRead read_rank_config(const std::string& text, const std::string& file) {
  RankConfigRead out;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    out.errors.push_back(file + ": not JSON");
    return out;
  }
  if (!j.is_object() || !j.contains("spec") || !j.contains("trial")) {
    out.errors.push_back(file + ": needs an object with keys spec and trial");
    return out;
  }
  // JSON is YAML: the normalized spec goes through the same validating loader as any spec.
  LoadResult r = load_spec_text(json_text(j["spec"]), file);
  for (const auto& e : r.errors) out.errors.push_back(e.to_string());
  if (!r.spec) return out;
  if (!j["trial"].is_object()) {
    out.errors.push_back(file + ": trial: expected an object");
    return out;
  }
  try {
    out.config = RankConfig{std::move(*r.spec), TrialConfig::from_json(j["trial"])};
  } catch (const std::exception& e) {  // a missing or mistyped field, bad samples
    out.errors.push_back(file + ": trial: " + e.what());
  }
  return out;
}

}  // namespace ddpbisect
