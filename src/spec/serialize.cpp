#include "spec/serialize.hpp"

#include <yaml-cpp/yaml.h>

#include "common/json_util.hpp"
#include "spec/launchers.hpp"
#include "spec/passes.hpp"

namespace ddpbisect {

using nlohmann::json;

static json samples_json(const IndexSet& s) {
  if (s.ranges().size() == 1 && s.ranges()[0].first == 0) return s.size();
  return s.to_string();
}

static json requires_json(const FaultRequires& q) {
  json j = json::object();
  if (q.ranks) j["ranks"] = *q.ranks;
  if (q.min_world_size) j["min_world_size"] = *q.min_world_size;
  if (q.nodes) j["nodes"] = *q.nodes;
  if (q.step) j["step"] = *q.step;
  if (!q.components.empty()) j["components"] = q.components;
  if (!q.features.empty()) j["features"] = q.features;
  if (!q.absent_components.empty()) j["absent_components"] = q.absent_components;
  if (q.samples) j["samples"] = q.samples->to_string();
  if (q.all_samples) j["all_samples"] = q.all_samples->to_string();
  for (const auto& [name, b] : q.params) {
    json pb = json::object();
    if (b.min) pb["min"] = *b.min;
    if (b.max) pb["max"] = *b.max;
    j["params"][name] = pb;
  }
  return j;
}

// The built-in workload's part of the normalized spec.
static json builtin_json(const BuiltinWorkload& b) {
  json d = {{"kind", b.dataset.kind},           {"task", b.dataset.task},
            {"seed", b.dataset.seed},           {"features", b.dataset.features},
            {"drop_last", b.dataset.drop_last}, {"pad", b.dataset.pad}};
  if (b.dataset.samples) d["samples"] = b.dataset.samples;
  if (!b.dataset.path.empty()) d["path"] = b.dataset.path;
  if (b.dataset.task == "classification") d["classes"] = b.dataset.classes;
  json faults = json::array();
  for (const auto& f : b.faults) {
    json fj = {{"kind", to_string(f.kind)}};
    if (f.kind == FaultKind::raise) fj["message"] = f.message;
    if (f.kind == FaultKind::exit) fj["exit_code"] = f.exit_code;
    if (f.probability < 1.0) fj["probability"] = f.probability;
    if (f.delay.count()) fj["delay"] = format_duration(f.delay);
    if (!f.path.empty()) fj["path"] = f.path;
    if (!f.component.empty()) fj["component"] = f.component;
    if (f.kind == FaultKind::hang) fj["mode"] = to_string(f.mode);
    json rq = requires_json(f.requires_);
    if (!rq.empty()) fj["requires"] = rq;
    faults.push_back(fj);
  }
  json w = {{"model", b.model},
            {"dataset", d},
            {"features", b.features},
            {"params", b.params},
            {"faults", faults}};
  w["collective_timeout"] = format_duration(b.collective_timeout);
  w["lr"] = b.lr;
  if (b.samples) w["samples"] = samples_json(*b.samples);
  return w;
}

// A command workload's part of the normalized spec (its keys sit beside `command`).
static json command_json(const CommandWorkload& c) {
  json w;
  w["command"] = c.argv;
  w["cwd"] = c.cwd;
  if (!c.env.empty()) w["env"] = c.env;
  if (c.samples_auto)
    w["samples"] = c.samples.empty() ? json("auto") : json{{"auto", samples_json(c.samples)}};
  else if (!c.samples.empty())
    w["samples"] = samples_json(c.samples);
  if (c.steps_auto) w["steps"] = "auto";
  w["agent"] = c.agent;
  if (!c.state.empty()) w["state"] = c.state;
  // The default (warm starts) is not spelled out; turning it off is.
  if (!c.world_size_param.empty()) w["world_size_param"] = c.world_size_param;
  if (!c.preload_default && (c.agent || !c.preload.empty()))
    w["preload"] = c.preload.empty() ? json("none") : json(c.preload);
  w["components"] = c.components;
  w["features"] = c.features;
  w["params"] = c.params;
  return w;
}

nlohmann::json spec_to_json(const Spec& spec) {
  json j;
  j["version"] = spec.version;
  j["name"] = spec.name;
  json w;
  if (spec.builtin)
    w["builtin"] = builtin_json(*spec.builtin);
  else if (spec.command)
    w = command_json(*spec.command);
  j["workload"] = w;
  json stages = json::array();
  for (const auto& s : spec.stages)
    stages.push_back({{"name", s.name},
                      {"nodes", s.nodes},
                      {"procs_per_node", s.procs_per_node},
                      {"device", s.device}});
  j["stages"] = stages;
  json l = {{"kind", spec.launcher.kind}};
  const LauncherKind* kind = find_launcher_kind(spec.launcher.kind);
  for (const auto& key : launcher_keys()) {  // the keys this kind reads, when set
    json v = launcher_value(spec.launcher, key.name);
    if (!v.is_null() && kind && kind->takes(key.name)) l[key.name] = v;
  }
  j["launcher"] = l;
  json dims = json::object();
  for (const auto& d : reduce_dimensions()) dims[d] = spec.reduce.enabled(d);
  json budget = json::object();
  if (spec.reduce.max_trials) budget["max_trials"] = *spec.reduce.max_trials;
  if (spec.reduce.max_time) budget["max_time"] = format_duration(*spec.reduce.max_time);
  j["reduce"] = {{"dimensions", dims},
                 {"strategy", spec.reduce.strategy},
                 {"jobs", spec.reduce.jobs},
                 {"confidence", spec.reduce.confidence}};
  if (!budget.empty()) j["reduce"]["budget"] = budget;
  j["limits"] = {{"trial_timeout", spec.limits.trial_timeout_auto
                                       ? std::string("auto")
                                       : format_duration(spec.limits.trial_timeout)},
                 {"hang_after", spec.limits.hang_after ? format_duration(*spec.limits.hang_after)
                                                       : std::string("auto")},
                 {"grace", format_duration(spec.limits.grace)},
                 {"log_cap", spec.limits.log_cap_bytes}};
  if (spec.limits.memory_bytes) j["limits"]["memory"] = *spec.limits.memory_bytes;
  if (spec.limits.max_procs) j["limits"]["max_procs"] = *spec.limits.max_procs;
  j["match"] = {{"level", spec.match.level}};
  if (!spec.match.regex.empty()) j["match"]["regex"] = spec.match.regex;
  if (!spec.match.ignore_frames.empty()) j["match"]["ignore_frames"] = spec.match.ignore_frames;
  if (!spec.match.signature_category.empty())
    j["match"]["signature"] = {{"category", spec.match.signature_category},
                               {"exception", spec.match.signature_exception},
                               {"frame", spec.match.signature_frame}};
  j["report"] = {{"dir", spec.report_dir}};
  return j;
}

static bool looks_typed(const std::string& s) {
  int64_t i;
  double d;
  bool b;
  YAML::Node n(s);
  return YAML::convert<int64_t>::decode(n, i) || YAML::convert<double>::decode(n, d) ||
         YAML::convert<bool>::decode(n, b) || s == "~" || s == "null";
}

static void emit(YAML::Emitter& out, const json& j) {
  switch (j.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key << k << YAML::Value;
        emit(out, v);
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array: {
      bool flat = std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_primitive(); });
      if (flat) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& v : j) emit(out, v);
      out << YAML::EndSeq;
      break;
    }
    case json::value_t::string: {
      // Quote strings that would read back as another type ("37" must stay a string).
      const std::string& s = j.get_ref<const std::string&>();
      // A string that does not even parse as YAML (a leading backtick, '@', '%') is quoted too.
      bool plain_ok = false;
      try {
        YAML::Node probe = YAML::Load(s.empty() ? "''" : s);
        plain_ok = probe.IsScalar() && probe.Scalar() == s && probe.Tag() == "?" && !looks_typed(s);
      } catch (const YAML::Exception&) {
      }
      if (!plain_ok) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case json::value_t::boolean:
      out << j.get<bool>();
      break;
    case json::value_t::number_integer:
      out << j.get<int64_t>();
      break;
    case json::value_t::number_unsigned:
      out << j.get<uint64_t>();
      break;
    case json::value_t::number_float:
      // The shortest text that reads back as the same double: 0.95, not 0.94999999999999996.
      out << json_text(j);
      break;
    default:
      out << YAML::Null;
      break;
  }
}

std::string json_to_yaml(const json& j) {
  YAML::Emitter out;
  emit(out, j);
  return std::string(out.c_str()) + "\n";
}

}  // namespace ddpbisect
