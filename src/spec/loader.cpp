// Spec loader: walks the YAML tree once, converting and checking every key. Errors are collected
// (never thrown) so one run reports all of them, each anchored at the node that caused it.
#include "spec/loader.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "spec/launchers.hpp"
#include "spec/passes.hpp"
#include "spec/workload_loader.hpp"
#include "spec/yaml_reader.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

#ifndef DDPBISECT_WORKER_CUDA
#define DDPBISECT_WORKER_CUDA 0
#endif
bool worker_has_cuda() {
  if (DDPBISECT_WORKER_CUDA != 0) return true;
  // A worker built elsewhere against a CUDA libtorch (a GPU machine's own, see
  // scripts/gpu-kit.sh), named by DDPBISECT_WORKER, is declared by its builder.
  const char* declared = std::getenv("DDPBISECT_WORKER_CUDA");
  return declared && std::string(declared) == "1" && std::getenv("DDPBISECT_WORKER");
}

const Stage* Spec::find_stage(const std::string& n) const {
  for (const auto& s : stages)
    if (s.name == n) return &s;
  return nullptr;
}

namespace {

using spec_yaml::did_you_mean;
using spec_yaml::Reader;

class SpecLoader {
 public:
  SpecLoader(const std::string& file, Diagnostics& errors)
      : r_(file, errors), base_dir_(fs::absolute(fs::path(file)).parent_path()) {}

  Spec load(const YAML::Node& root) {
    Spec spec;
    spec.file = fs::absolute(fs::path(r_.file())).lexically_normal().string();
    // report.dir: a given one is relative to the spec's folder; the default is in the current one.
    spec.report_dir = fs::absolute(spec.report_dir).lexically_normal().string();
    if (!root.IsMap()) {
      r_.error(root, "",
               "a spec is a YAML mapping with keys version, workload, stages, ...; found " +
                   Reader::describe(root));
      return spec;
    }
    r_.check_keys(root, "",
                  {"version", "name", "workload", "stages", "launcher", "reduce", "limits", "match",
                   "report"});
    if (auto n = root["version"]) {
      if (auto v = r_.integer(n, "version", 1, 1)) spec.version = *v;
    }
    if (auto n = root["name"]) {
      if (auto v = r_.string(n, "name")) spec.name = *v;
    } else {
      spec.name = fs::path(r_.file()).stem().string();
    }
    if (auto n = root["workload"])
      spec_yaml::load_workload(r_, base_dir_, n, spec);
    else
      r_.error(root, "workload", "missing: give either workload.builtin or workload.command");
    if (auto n = root["stages"])
      load_stages(n, spec);
    else
      r_.error(
          root, "stages",
          "missing: give at least one stage, e.g. {name: single, nodes: 1, procs_per_node: 1}");
    if (auto n = root["launcher"]) load_launcher(n, spec);
    if (auto n = root["reduce"]) load_reduce(n, spec);
    if (auto n = root["limits"]) load_limits(n, spec);
    if (auto n = root["match"]) load_match(n, spec);
    if (auto n = root["report"]) {
      if (r_.expect_map(n, "report")) {
        r_.check_keys(n, "report", {"dir"});
        if (auto d = n["dir"])
          if (auto v = r_.string(d, "report.dir")) spec.report_dir = resolve(*v);
      }
    }
    cross_checks(root, spec);
    return spec;
  }

 private:
  std::string resolve(const std::string& p) const { return spec_yaml::resolve_path(base_dir_, p); }

  void load_stages(const YAML::Node& n, Spec& spec) {
    if (!n.IsSequence()) {
      r_.error(n, "stages", "expected a list of stages, found " + Reader::describe(n));
      return;
    }
    if (n.size() == 0) {
      r_.error(n, "stages", "the stage ladder is empty; give at least one stage");
      return;
    }
    std::map<std::string, int> names;
    for (size_t i = 0; i < n.size(); ++i) {
      std::string p = "stages[" + std::to_string(i) + "]";
      const YAML::Node s = n[i];
      if (!r_.expect_map(s, p)) continue;
      r_.check_keys(s, p, {"name", "nodes", "procs_per_node", "device"});
      Stage st;
      if (auto k = s["nodes"])
        if (auto v = r_.integer(k, p + ".nodes", 1, 4096)) st.nodes = *v;
      if (auto k = s["procs_per_node"])
        if (auto v = r_.integer(k, p + ".procs_per_node", 1, 1024)) st.procs_per_node = *v;
      if (auto k = s["device"])
        if (auto v = r_.one_of(k, p + ".device", {"cpu", "cuda"})) st.device = *v;
      if (auto k = s["name"]) {
        if (auto v = r_.string(k, p + ".name")) st.name = *v;
      } else {
        st.name = std::to_string(st.nodes) + "x" + std::to_string(st.procs_per_node);
      }
      if (auto prev = names.find(st.name); prev != names.end()) {
        r_.error(s["name"] ? s["name"] : s, p + ".name",
                 "duplicate stage name '" + st.name + "' (first used by stages[" +
                     std::to_string(prev->second) + "])");
      } else {
        names[st.name] = static_cast<int>(i);
      }
      spec.stages.push_back(st);
    }
  }

  void load_launcher(const YAML::Node& n, Spec& spec) {
    if (!r_.expect_map(n, "launcher")) return;
    std::vector<std::string> keys = {"kind"};
    for (const auto& key : launcher_keys()) keys.push_back(key.name);
    r_.check_keys(n, "launcher", keys);
    if (auto k = n["options"]) {
      if (!k.IsSequence()) {
        r_.error(k, "launcher.options",
                 "expected a list of arguments, found " + Reader::describe(k));
      } else {
        for (size_t i = 0; i < k.size(); ++i)
          if (auto v = r_.string(k[i], "launcher.options[" + std::to_string(i) + "]"))
            spec.launcher.options.push_back(*v);
      }
    }
    if (auto k = n["cwd"])
      if (auto v = r_.string(k, "launcher.cwd")) spec.launcher.cwd = *v;
    if (auto k = n["env"]) {
      if (r_.expect_map(k, "launcher.env")) {
        for (const auto& kv : k) {
          std::string host = kv.first.Scalar();
          spec.launcher.host_env[host] = r_.env_map(kv.second, "launcher.env." + host);
        }
      }
    }
    if (auto k = n["kind"])
      if (auto v = r_.one_of(k, "launcher.kind", launcher_kind_names())) spec.launcher.kind = *v;
    if (auto k = n["hosts"])
      if (auto v = r_.names(k, "launcher.hosts")) {
        spec.launcher.hosts = *v;
        // A host is one argv word of ssh, srun or the prefix: one starting with '-' would be
        // read as an option (ssh -oProxyCommand=...), a space or control character splits it.
        for (size_t i = 0; i < v->size(); ++i) {
          const std::string& h = (*v)[i];
          bool odd = std::any_of(h.begin(), h.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return std::isspace(u) || u < 0x20;
          });
          if (starts_with(h, "-") || odd)
            r_.error(k[i], "launcher.hosts[" + std::to_string(i) + "]",
                     "'" + visible_text(h) + "' is not a host name (it " +
                         (odd ? "holds a space or a control character" : "starts with '-'") + ")");
        }
      }
    if (auto k = n["prefix"])
      if (auto v = r_.string(k, "launcher.prefix")) spec.launcher.prefix = *v;
    if (auto k = n["master_addr"])
      if (auto v = r_.string(k, "launcher.master_addr")) spec.launcher.master_addr = *v;
    const LauncherKind& kind = *find_launcher_kind(spec.launcher.kind);
    for (const auto& name : kind.requires_keys)
      for (const auto& key : launcher_keys())
        if (key.name == name && launcher_value(spec.launcher, name).is_null())
          r_.error(n, "launcher." + name,
                   "missing: the " + kind.name + " launcher needs " + key.needs);
    if (auto k = n["env"]; k && k.IsMap() && !spec.launcher.hosts.empty()) {
      for (const auto& kv : k) {
        std::string host = kv.first.Scalar();
        const auto& hosts = spec.launcher.hosts;
        if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
          std::string guess = closest_match(host, hosts);
          r_.error(kv.first, "launcher.env",
                   "'" + host + "' is not in launcher.hosts" +
                       (guess.empty() ? "" : "; did you mean '" + guess + "'?"));
        }
      }
    }
  }

  void load_reduce(const YAML::Node& n, Spec& spec) {
    if (!r_.expect_map(n, "reduce")) return;
    r_.check_keys(n, "reduce", {"dimensions", "budget", "strategy", "jobs", "confidence"});
    if (auto k = n["dimensions"]) {
      if (r_.expect_map(k, "reduce.dimensions")) {
        r_.check_keys(k, "reduce.dimensions", reduce_dimensions());
        for (const auto& kv : k) {
          std::string d = kv.first.Scalar();
          if (auto v = r_.boolean(kv.second, "reduce.dimensions." + d))
            spec.reduce.dimensions[d] = *v;
        }
      }
    }
    if (auto b = n["budget"]) {
      if (r_.expect_map(b, "reduce.budget")) {
        r_.check_keys(b, "reduce.budget", {"max_trials", "max_time"});
        if (auto k = b["max_trials"])
          spec.reduce.max_trials = r_.integer(k, "reduce.budget.max_trials", 1);
        if (auto k = b["max_time"]) spec.reduce.max_time = r_.duration(k, "reduce.budget.max_time");
      }
    }
    if (auto k = n["strategy"])
      if (auto v = r_.one_of(k, "reduce.strategy", strategy_names())) spec.reduce.strategy = *v;
    if (auto k = n["jobs"])
      if (auto v = r_.integer(k, "reduce.jobs", 1, 256)) spec.reduce.jobs = *v;
    if (auto k = n["confidence"])
      if (auto v = r_.number(k, "reduce.confidence", 0.5, 0.9999)) spec.reduce.confidence = *v;
  }

  void load_limits(const YAML::Node& n, Spec& spec) {
    if (!r_.expect_map(n, "limits")) return;
    r_.check_keys(n, "limits",
                  {"trial_timeout", "hang_after", "log_cap", "grace", "memory", "max_procs"});
    if (auto k = n["trial_timeout"]) {
      if (!(k.IsScalar() && k.Scalar() == "auto"))
        if (auto v = r_.duration(k, "limits.trial_timeout")) {
          spec.limits.trial_timeout = *v;
          spec.limits.trial_timeout_auto = false;
        }
    }
    if (auto k = n["hang_after"]) {
      if (!(k.IsScalar() && k.Scalar() == "auto"))
        if (auto v = r_.duration(k, "limits.hang_after")) spec.limits.hang_after = *v;
    }
    if (auto k = n["grace"])
      if (auto v = r_.duration(k, "limits.grace")) spec.limits.grace = *v;
    if (auto k = n["log_cap"]) {
      auto bytes = k.IsScalar() ? parse_size(k.Scalar()) : std::nullopt;
      if (bytes && *bytes >= 4096)
        spec.limits.log_cap_bytes = *bytes;
      else
        r_.error(
            k, "limits.log_cap",
            "expected a size of at least 4KB such as 64MB or 1GB, found " + Reader::describe(k));
    }
    if (auto k = n["memory"]) {
      auto bytes = k.IsScalar() ? parse_size(k.Scalar()) : std::nullopt;
      if (bytes && *bytes >= (4 << 20))
        spec.limits.memory_bytes = *bytes;
      else
        r_.error(
            k, "limits.memory",
            "expected a size of at least 4MB such as 512MB or 8GB, found " + Reader::describe(k));
    }
    if (auto k = n["max_procs"])
      if (auto v = r_.integer(k, "limits.max_procs", 1, 1 << 22)) spec.limits.max_procs = *v;
  }

  static std::optional<int64_t> parse_size(std::string s) {
    s = std::string(trim(s));
    size_t u = s.find_first_not_of("0123456789");
    if (u == 0 || std::min(u, s.size()) > 12) return std::nullopt;  // no overflow below

    int64_t v = std::stoll(s.substr(0, u));
    std::string unit = u == std::string::npos ? "" : s.substr(u);
    for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (unit.empty() || unit == "B") return v;
    if (unit == "KB" || unit == "K") return v << 10;
    if (unit == "MB" || unit == "M") return v << 20;
    if (unit == "GB" || unit == "G") return v << 30;
    return std::nullopt;
  }

  void load_match(const YAML::Node& n, Spec& spec) {
    if (!r_.expect_map(n, "match")) return;
    r_.check_keys(n, "match", {"level", "regex", "ignore_frames", "signature"});
    if (auto k = n["signature"]) {
      if (r_.expect_map(k, "match.signature")) {
        r_.check_keys(k, "match.signature", {"category", "exception", "frame"});
        if (auto c = k["category"]) {
          if (auto v = r_.one_of(c, "match.signature.category", category_names()))
            spec.match.signature_category = *v;
        } else {
          r_.error(k, "match.signature.category", "missing: a pinned signature names its category");
        }
        if (auto c = k["exception"])
          if (auto v = r_.string(c, "match.signature.exception", true))
            spec.match.signature_exception = *v;
        if (auto c = k["frame"])
          if (auto v = r_.string(c, "match.signature.frame", true)) spec.match.signature_frame = *v;
      }
    }
    if (auto k = n["ignore_frames"])
      if (auto v = r_.names(k, "match.ignore_frames")) spec.match.ignore_frames = *v;
    if (auto k = n["level"])
      if (auto v = r_.one_of(k, "match.level", {"strict", "default", "loose"}))
        spec.match.level = *v;
    if (auto k = n["regex"]) {
      if (auto v = r_.string(k, "match.regex")) {
        try {
          std::regex re(*v, std::regex::ECMAScript);
          spec.match.regex = *v;
        } catch (const std::regex_error& e) {
          r_.error(k, "match.regex", std::string("not a valid regular expression: ") + e.what());
        }
      }
    }
  }

  void cross_checks(const YAML::Node& root, Spec& spec) {
    const YAML::Node stages = root["stages"];
    for (size_t i = 0; i < spec.stages.size(); ++i) {
      const Stage& st = spec.stages[i];
      YAML::Node at = stages && stages.IsSequence() && i < stages.size() ? stages[i] : root;
      if (spec.command && !spec.command->world_size_param.empty() && st.nodes > 1)
        r_.error(at["nodes"] ? at["nodes"] : at, "stages[" + std::to_string(i) + "].nodes",
                 "a script that starts its own ranks (workload.world_size_param) runs as one "
                 "process on one node; ddpbisect cannot place its ranks on " +
                     std::to_string(st.nodes) + " nodes");
      if (st.device == "cuda" && spec.builtin && !worker_has_cuda()) {
        r_.error(at["device"] ? at["device"] : at, "stages[" + std::to_string(i) + "].device",
                 "this build's ddpbisect-worker uses a CPU-only libtorch, so builtin workloads "
                 "cannot run on cuda; use device: cpu, or rebuild against a CUDA libtorch");
      }
      if (find_launcher_kind(spec.launcher.kind)->requires_key("hosts") &&
          !spec.launcher.hosts.empty() &&
          st.nodes > static_cast<int64_t>(spec.launcher.hosts.size())) {
        r_.error(at, "stages[" + std::to_string(i) + "].nodes",
                 "needs " + std::to_string(st.nodes) + " nodes but launcher.hosts lists only " +
                     std::to_string(spec.launcher.hosts.size()));
      }
    }
    if (spec.builtin) {
      const auto& w = *spec.builtin;
      for (size_t i = 0; i < w.faults.size(); ++i) {
        const auto& q = w.faults[i].requires_;
        if (q.samples && w.dataset.samples > 0 && q.samples->max() >= w.dataset.samples) {
          const YAML::Node f = root["workload"]["builtin"]["faults"][i]["requires"]["samples"];
          r_.error(f, "workload.builtin.faults[" + std::to_string(i) + "].requires.samples",
                   "index " + std::to_string(q.samples->max()) + " is outside the data set (" +
                       std::to_string(w.dataset.samples) + " samples)");
        }
      }
    }
    if (spec.command && find_launcher_kind(spec.launcher.kind)->runs_here) {
      // State paths are checked where ranks run: here for the local launcher (doctor checks
      // them per node on the others).
      for (size_t i = 0; i < spec.command->state.size(); ++i) {
        std::error_code ec;
        if (!fs::exists(spec.command->state[i], ec))
          r_.error(root["workload"]["state"][i], "workload.state[" + std::to_string(i) + "]",
                   "no such file or directory: " + spec.command->state[i]);
      }
    }
    if (spec.command && !spec.command->argv.empty() &&
        find_launcher_kind(spec.launcher.kind)->runs_here) {
      const std::string& exe = spec.command->argv[0];
      if (exe.find('/') != std::string::npos) {
        fs::path p =
            fs::path(exe).is_absolute() ? fs::path(exe) : fs::path(spec.command->cwd) / exe;
        std::error_code ec;
        if (!fs::exists(p, ec))
          r_.error(root["workload"]["command"][0], "workload.command[0]",
                   "no such program: " + p.string());
      }
    }
  }

  Reader r_;
  fs::path base_dir_;
};

}  // namespace

// A spec is UTF-8 text (as YAML is): a byte that is not becomes an error at its line and column,
// before the YAML parser sees it (which rejects escapes that decode to no character, "\ud800"),
// so that every string of a spec is UTF-8 and every JSON text made from it can be written.
LoadResult load_spec_text(const std::string& text, const std::string& file) {
  LoadResult result;
  if (const size_t at = utf8_error(text); at != std::string::npos) {
    const size_t from = at == 0 ? 0 : text.rfind('\n', at - 1) + 1;  // npos + 1: the first line
    const int line =
        1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[at]));
    result.errors.push_back({file, line, static_cast<int>(at - from) + 1, "",
                             std::string("the spec is not UTF-8 text: byte ") + byte +
                                 " does not begin a UTF-8 character"});
    return result;
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    Diagnostic d;
    d.file = file;
    d.line = e.mark.is_null() ? 0 : e.mark.line + 1;
    d.column = e.mark.is_null() ? 0 : e.mark.column + 1;
    d.message = "YAML syntax error: " + e.msg;
    result.errors.push_back(d);
    return result;
  }
  if (!root || root.IsNull()) {
    result.errors.push_back({file, 1, 1, "", "the spec is empty"});
    return result;
  }
  SpecLoader loader(file, result.errors);
  Spec spec = loader.load(root);
  if (result.errors.empty()) result.spec = std::move(spec);
  std::stable_sort(result.errors.begin(), result.errors.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                   });
  return result;
}

LoadResult load_spec_file(const std::string& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec))
    return {std::nullopt, {{file, 0, 0, "", "is a directory, not a spec file"}}};
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return {std::nullopt,
            {{file, 0, 0, "", "cannot read the spec: " + std::string(std::strerror(errno))}}};
  std::stringstream ss;
  ss << in.rdbuf();
  return load_spec_text(ss.str(), file);
}

}  // namespace ddpbisect
