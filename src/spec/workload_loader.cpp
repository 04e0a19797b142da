// The spec's `workload`: a built-in model (components, data set, planted faults) or a command
// (argv with placeholders, cwd, env, samples, preload). Called by SpecLoader (loader.cpp).
#include "spec/workload_loader.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/text.hpp"
#include "spec/fault_kinds.hpp"
#include "spec/placeholders.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

const std::vector<std::string>& builtin_components() {
  static const std::vector<std::string> v = {"embedding", "linear",    "mlp",     "conv1d",
                                             "layernorm", "batchnorm", "dropout", "residual",
                                             "attention", "head"};
  return v;
}

const std::vector<std::string>& builtin_features() {
  static const std::vector<std::string> v = {"grad_accum", "grad_clip", "checkpoint",
                                             "eval",       "sync_bn",   "param_checksum"};
  return v;
}

static const std::vector<std::string> kBuiltinParams = {"steps",      "batch_size", "hidden",
                                                        "grad_accum", "eval_every", "threads"};

namespace spec_yaml {
namespace {

class WorkloadLoader {
 public:
  WorkloadLoader(Reader& r, fs::path base_dir) : r_(r), base_dir_(std::move(base_dir)) {}

  // auto: what a DDP training script imports, and what DDP's constructor imports on first use
  // (torch._dynamo: ~0.9 s with PyTorch 2.x); a module this torch lacks is skipped.
  static std::vector<std::string> auto_preload() {
    return {"torch",       "torch.distributed", "torch.nn.parallel",
            "torch.optim", "torch.utils.data",  "torch._dynamo"};
  }

  // `workload.preload: [torch, ...]`: Python modules a fork server imports once (warm starts).
  void load_preload(const YAML::Node& k, CommandWorkload& c) {
    const bool automatic = k.IsScalar() && k.Scalar() == "auto";
    const bool none = k.IsScalar() && k.Scalar() == "none";
    auto v = automatic ? std::optional<std::vector<std::string>>(auto_preload())
             : none    ? std::optional<std::vector<std::string>>(std::vector<std::string>{})
                       : r_.names(k, "workload.preload");
    if (!v) return;
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string& m = (*v)[i];
      bool ok =
          !m.empty() && m.front() != '.' && m.back() != '.' && m.find("..") == std::string::npos;
      for (char ch : m)
        ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.');
      if (!ok) {
        r_.error(
            k[i], "workload.preload[" + std::to_string(i) + "]",
            "expected a Python module name such as torch or torch.distributed, found '" + m + "'");
        return;
      }
    }
    if (!c.agent && !v->empty()) {
      r_.error(k, "workload.preload",
               "preload needs the agent (workload.agent is false): the forked ranks are set up "
               "by it");
      return;
    }
    c.preload = *v;
  }

  void load_workload(const YAML::Node& n, Spec& spec) {
    if (!r_.expect_map(n, "workload")) return;
    r_.check_keys(n, "workload",
                  {"builtin", "command", "cwd", "env", "samples", "components", "features",
                   "params", "agent", "state", "steps", "preload", "world_size_param"});
    bool has_builtin = static_cast<bool>(n["builtin"]);
    bool has_command = static_cast<bool>(n["command"]);
    if (has_builtin && has_command) {
      r_.error(n["command"], "workload",
               "give either builtin or command, not both (found both; builtin is on line " +
                   std::to_string(n["builtin"].Mark().line + 1) + ")");
      return;
    }
    if (!has_builtin && !has_command) {
      r_.error(n, "workload", "missing: give either workload.builtin or workload.command");
      return;
    }
    if (has_builtin) {
      for (const char* k : {"cwd", "env", "samples", "components", "features", "params", "agent",
                            "state", "steps", "preload", "world_size_param"}) {
        if (n[k])
          r_.error(n[k], std::string("workload.") + k,
                   std::string("belongs to command workloads; for builtin, put it under "
                               "workload.builtin"));
      }
      spec.builtin = load_builtin(n["builtin"]);
    } else {
      spec.command = load_command(n);
    }
  }

  BuiltinWorkload load_builtin(const YAML::Node& n) {
    BuiltinWorkload w;
    const std::string p = "workload.builtin";
    if (!r_.expect_map(n, p)) return w;
    r_.check_keys(n, p,
                  {"model", "dataset", "features", "params", "faults", "collective_timeout", "lr",
                   "samples"});
    if (auto k = n["samples"]) w.samples = r_.samples(k, p + ".samples", true);
    if (auto k = n["collective_timeout"])
      if (auto v = r_.duration(k, p + ".collective_timeout")) w.collective_timeout = *v;
    if (auto k = n["lr"])
      if (auto v = r_.number(k, p + ".lr", 1e-9, 100.0)) w.lr = *v;
    if (auto m = n["model"]) {
      if (auto v = r_.names(m, p + ".model", builtin_components())) {
        w.model = *v;  // may be empty: the worker then trains nothing but still runs collectives
      }
    } else {
      r_.error(n, p + ".model",
               "missing: list the model's components, e.g. [embedding, linear, head]");
    }
    if (auto d = n["dataset"])
      w.dataset = load_dataset(d, p + ".dataset");
    else
      r_.error(n, p + ".dataset", "missing: e.g. {kind: synthetic, samples: 512, seed: 1}");
    if (auto f = n["features"])
      if (auto v = r_.names(f, p + ".features", builtin_features())) w.features = *v;
    if (auto pr = n["params"]) w.params = r_.params(pr, p + ".params", kBuiltinParams);
    if (auto fl = n["faults"]) {
      if (!fl.IsSequence()) {
        r_.error(fl, p + ".faults", "expected a list of faults, found " + Reader::describe(fl));
      } else {
        for (size_t i = 0; i < fl.size(); ++i)
          w.faults.push_back(load_fault(fl[i], p + ".faults[" + std::to_string(i) + "]", w));
      }
    }
    return w;
  }

  Dataset load_dataset(const YAML::Node& n, const std::string& p) {
    Dataset d;
    if (!r_.expect_map(n, p)) return d;
    r_.check_keys(
        n, p,
        {"kind", "samples", "seed", "path", "task", "features", "classes", "drop_last", "pad"});
    if (auto k = n["kind"])
      if (auto v = r_.one_of(k, p + ".kind", {"synthetic", "csv", "binary"})) d.kind = *v;
    if (auto k = n["task"])
      if (auto v = r_.one_of(k, p + ".task", {"regression", "classification"})) d.task = *v;
    if (auto k = n["seed"])
      if (auto v = r_.integer(k, p + ".seed", 0)) d.seed = static_cast<uint64_t>(*v);
    if (auto k = n["features"])
      if (auto v = r_.integer(k, p + ".features", 1, 4096)) d.features = *v;
    if (auto k = n["classes"])
      if (auto v = r_.integer(k, p + ".classes", 2, 100000)) d.classes = *v;
    if (auto k = n["drop_last"])
      if (auto v = r_.boolean(k, p + ".drop_last")) d.drop_last = *v;
    if (auto k = n["pad"])
      if (auto v = r_.boolean(k, p + ".pad")) d.pad = *v;
    if (d.kind == "synthetic") {
      if (auto k = n["samples"]) {
        if (auto v = r_.integer(k, p + ".samples", 1)) d.samples = *v;
      } else {
        r_.error(n, p + ".samples", "missing: a synthetic data set needs a sample count");
      }
      if (auto k = n["path"]) r_.error(k, p + ".path", "only csv and binary data sets read a file");
    } else {
      if (auto k = n["path"]) {
        if (auto v = r_.string(k, p + ".path")) {
          d.path = resolve_path(base_dir_, *v);
          std::error_code ec;
          if (!fs::is_regular_file(d.path, ec)) r_.error(k, p + ".path", "no such file: " + d.path);
        }
      } else {
        r_.error(n, p + ".path", "missing: a " + d.kind + " data set needs a path");
      }
      if (auto k = n["samples"])
        if (auto v = r_.integer(k, p + ".samples", 1)) d.samples = *v;  // optional cap
      // A CSV data set's samples are its data rows (a header row is not one); a cap may not
      // exceed them.
      if (d.kind == "csv" && !d.path.empty()) {
        const long long rows = csv_data_rows(d.path);
        if (rows == 0) r_.error(n["path"], p + ".path", "the data set has no data rows: " + d.path);
        if (rows > 0 && !n["samples"]) d.samples = rows;
        if (rows > 0 && d.samples > rows)
          r_.error(n["samples"], p + ".samples",
                   std::to_string(d.samples) + " is more than the " + std::to_string(rows) +
                       " data rows of " + d.path);
      }
    }
    return d;
  }

  Fault load_fault(const YAML::Node& n, const std::string& p, const BuiltinWorkload& w) {
    Fault f;
    if (!r_.expect_map(n, p)) return f;
    r_.check_keys(n, p,
                  {"kind", "message", "exit_code", "probability", "delay", "path", "component",
                   "mode", "requires"});
    if (auto k = n["mode"])
      if (auto v = r_.one_of(k, p + ".mode", vocabulary_names(kHangModeNames)))
        f.mode = *vocabulary_parse<HangMode>(*v, kHangModeNames);
    bool known = false;
    if (auto k = n["kind"]) {
      if (auto v = r_.one_of(k, p + ".kind", fault_kind_names())) {
        f.kind = *parse_fault_kind(*v);
        known = true;
      }
    } else {
      r_.error(n, p + ".kind", "missing: one of " + join(fault_kind_names(), ", "));
    }
    f.message = "planted failure";
    if (auto k = n["message"])
      if (auto v = r_.string(k, p + ".message")) f.message = *v;
    if (auto k = n["exit_code"])
      if (auto v = r_.integer(k, p + ".exit_code", 1, 255)) f.exit_code = *v;
    if (auto k = n["probability"])
      if (auto v = r_.number(k, p + ".probability", 0.0, 1.0)) f.probability = *v;
    if (auto k = n["delay"])
      if (auto v = r_.duration(k, p + ".delay")) f.delay = *v;
    if (auto k = n["path"])
      if (auto v = r_.string(k, p + ".path")) f.path = *v;
    if (auto k = n["component"])
      if (auto v = r_.one_of(k, p + ".component", builtin_components())) f.component = *v;
    if (known) check_kind_keys(n, p, f);
    if (f.kind == FaultKind::unused_parameter && !f.component.empty() &&
        std::find(w.model.begin(), w.model.end(), f.component) == w.model.end() && !w.model.empty())
      r_.error(n["component"], p + ".component",
               "'" + f.component + "' is not in workload.builtin.model");
    if (f.kind == FaultKind::straggler && f.delay.count() == 0) f.delay = Millis(2000);
    if (auto rq = n["requires"]) f.requires_ = load_requires(rq, p + ".requires", w);
    return f;
  }

  // The keys only some kinds read (spec/fault_kinds.def): each one set must be the kind's, and
  // the kind's required ones set.
  void check_kind_keys(const YAML::Node& n, const std::string& p, const Fault& f) {
    const FaultKindInfo& info = fault_kind_info(f.kind);
    const std::string kind = to_string(f.kind);
    for (const auto& key : fault_option_keys()) {
      if (n[key.name] && !info.takes_key(key.name)) {
        std::vector<std::string> readers;
        for (const auto& other : fault_kinds())
          if (other.takes_key(key.name)) readers.push_back(to_string(other.kind));
        r_.error(n[key.name], p + "." + key.name,
                 "a " + kind + " fault does not read " + key.name + " (only " +
                     join(readers, ", ") + " does)");
      } else if (!n[key.name] && std::find(info.required.begin(), info.required.end(), key.name) !=
                                     info.required.end()) {
        r_.error(n, p + "." + key.name, "missing: a " + kind + " fault needs " + key.needs);
      }
    }
  }

  FaultRequires load_requires(const YAML::Node& n, const std::string& p, const BuiltinWorkload& w) {
    FaultRequires q;
    if (!r_.expect_map(n, p)) return q;
    r_.check_keys(n, p,
                  {"ranks", "min_world_size", "nodes", "step", "components", "features", "samples",
                   "all_samples", "absent_components", "params"});
    if (auto k = n["absent_components"])
      if (auto v = r_.names(k, p + ".absent_components", builtin_components()))
        q.absent_components = *v;
    if (auto k = n["all_samples"]) q.all_samples = r_.samples(k, p + ".all_samples", false);
    if (auto k = n["ranks"]) q.ranks = r_.integers(k, p + ".ranks", 0);
    if (auto k = n["min_world_size"]) q.min_world_size = r_.integer(k, p + ".min_world_size", 1);
    if (auto k = n["nodes"]) q.nodes = r_.integers(k, p + ".nodes", 0);
    if (auto k = n["step"]) q.step = r_.integer(k, p + ".step", 0);
    if (auto k = n["components"]) {
      if (auto v = r_.names(k, p + ".components", builtin_components())) {
        q.components = *v;
        for (size_t i = 0; i < v->size(); ++i)
          if (!w.model.empty() &&
              std::find(w.model.begin(), w.model.end(), (*v)[i]) == w.model.end())
            r_.error(
                k[i], p + ".components[" + std::to_string(i) + "]",
                "'" + (*v)[i] + "' is not in workload.builtin.model, so this fault can never fire");
      }
    }
    if (auto k = n["features"]) {
      if (auto v = r_.names(k, p + ".features", builtin_features())) q.features = *v;
    }
    if (auto k = n["samples"]) q.samples = r_.samples(k, p + ".samples", false);
    if (auto k = n["params"]) {
      if (r_.expect_map(k, p + ".params")) {
        for (const auto& kv : k) {
          std::string name = kv.first.Scalar();
          std::string pp = p + ".params." + name;
          if (std::find(kBuiltinParams.begin(), kBuiltinParams.end(), name) ==
              kBuiltinParams.end()) {
            std::string hint = did_you_mean(name, kBuiltinParams);
            r_.error(kv.first, pp,
                     "unknown param" +
                         (hint.empty() ? " (params: " + join(kBuiltinParams, ", ") + ")" : hint));
            continue;
          }
          IntBound b;
          if (kv.second.IsMap()) {
            r_.check_keys(kv.second, pp, {"min", "max"});
            if (auto m = kv.second["min"]) b.min = r_.integer(m, pp + ".min", 0);
            if (auto m = kv.second["max"]) b.max = r_.integer(m, pp + ".max", 0);
          } else if (auto v = r_.integer(kv.second, pp, 0)) {
            b.min = b.max = *v;
          }
          q.params[name] = b;
        }
      }
    }
    return q;
  }

  CommandWorkload load_command(const YAML::Node& n) {
    CommandWorkload c;
    const YAML::Node cmd = n["command"];
    if (cmd.IsSequence() && cmd.size() > 0) {
      for (size_t i = 0; i < cmd.size(); ++i)
        if (auto v = r_.string(cmd[i], "workload.command[" + std::to_string(i) + "]", true))
          c.argv.push_back(*v);
    } else if (cmd.IsScalar()) {
      r_.error(cmd, "workload.command",
               "expected a list of arguments such as [/usr/bin/python3, train.py]; commands are "
               "never run through a shell");
    } else {
      r_.error(cmd, "workload.command", "expected a non-empty list of arguments");
    }
    c.cwd = base_dir_.string();
    if (auto k = n["cwd"]) {
      if (auto v = r_.string(k, "workload.cwd")) {
        c.cwd = resolve_path(base_dir_, *v);
        std::error_code ec;
        if (!fs::is_directory(c.cwd, ec))
          r_.error(k, "workload.cwd", "no such directory: " + c.cwd);
      }
    }
    if (auto k = n["env"]) c.env = r_.env_map(k, "workload.env");
    if (auto k = n["agent"])
      if (auto v = r_.boolean(k, "workload.agent")) c.agent = *v;
    if (auto k = n["samples"]) {
      if (k.IsScalar() && k.Scalar() == "auto") {
        c.samples_auto = true;
      } else if (k.IsMap() && k.size() == 1 && k["auto"]) {
        // The agent's restriction from given indices (a minimal spec of an auto run).
        c.samples_auto = true;
        if (auto v = r_.samples(k["auto"], "workload.samples.auto", false)) c.samples = *v;
      } else if (auto v = r_.samples(k, "workload.samples", true)) {
        c.samples = *v;
      }
      if (c.samples_auto && !c.agent)
        r_.error(k, "workload.samples",
                 "samples: auto needs the agent (workload.agent is false); give a count or "
                 "index ranges and read {samples} in the script");
    }
    if (auto k = n["steps"]) {
      if (k.IsScalar() && k.Scalar() == "auto") {
        c.steps_auto = true;
        if (!c.agent)
          r_.error(k, "workload.steps",
                   "steps: auto needs the agent (workload.agent is false); use a param such as "
                   "params.steps and read {steps} in the script");
      } else {
        r_.error(k, "workload.steps",
                 "expected auto, found " + Reader::describe(k) +
                     "; a fixed step count is a param: params: {steps: N} and {steps} in the "
                     "command");
      }
    }
    if (auto k = n["state"])
      if (auto v = r_.names(k, "workload.state"))
        for (const auto& s : *v) c.state.push_back(resolve_path(base_dir_, s));
    if (auto k = n["preload"]) {
      load_preload(k, c);
    } else if (c.agent) {  // warm starts unless the spec says `preload: none`
      c.preload = auto_preload();
      c.preload_default = true;
    }
    if (auto k = n["components"])
      if (auto v = r_.names(k, "workload.components")) c.components = *v;
    if (auto k = n["features"])
      if (auto v = r_.names(k, "workload.features")) c.features = *v;
    if (auto k = n["params"]) c.params = r_.params(k, "workload.params", {});
    if (auto k = n["world_size_param"]) load_world_size_param(k, c);
    check_placeholders(cmd, c);
    return c;
  }

  void load_world_size_param(const YAML::Node& k, CommandWorkload& c) {
    const char* key = "workload.world_size_param";
    auto v = r_.string(k, key);
    if (!v) return;
    bool ident = !v->empty() && !std::isdigit(static_cast<unsigned char>((*v)[0]));
    for (char ch : *v) ident = ident && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    if (!ident) {
      r_.error(k, key, "expected a param name (letters, digits, _), found \"" + *v + "\"");
    } else if (c.params.count(*v)) {
      r_.error(k, key,
               "\"" + *v +
                   "\" is also in workload.params: the stage's rank count sets it, so it "
                   "cannot be reduced as a param; drop it from params");
    } else {
      c.world_size_param = *v;
    }
  }

  void check_placeholders(const YAML::Node& cmd, const CommandWorkload& c) {
    if (!cmd.IsSequence()) return;
    std::vector<std::string> known = {"samples", "components",     "features",
                                      "nodes",   "procs_per_node", "world_size",
                                      "rank",    "local_rank",     "node_rank"};
    for (const auto& [k, v] : c.params) known.push_back(k);
    if (!c.world_size_param.empty()) known.push_back(c.world_size_param);
    for (size_t i = 0; i < cmd.size() && i < c.argv.size(); ++i) {
      std::string perr;
      size_t off = 0;
      auto names = placeholder_names(c.argv[i], &perr, &off);
      int quote = cmd[i].Tag() == "!" ? 1 : 0;
      std::string ip = "workload.command[" + std::to_string(i) + "]";
      if (!names) {
        r_.error(cmd[i].Mark(), ip, perr, static_cast<int>(off) + quote);
        continue;
      }
      for (const auto& [name, at] : *names) {
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        std::string msg = "placeholder {" + name + "} names no param (known: " + join(known, ", ") +
                          ")" + did_you_mean(name, known, "{", "}");
        r_.error(cmd[i].Mark(), ip, msg, static_cast<int>(at) + quote);
      }
    }
  }

 private:
  Reader& r_;
  fs::path base_dir_;
};

}  // namespace

void load_workload(Reader& r, const fs::path& base_dir, const YAML::Node& n, Spec& spec) {
  WorkloadLoader(r, base_dir).load_workload(n, spec);
}

}  // namespace spec_yaml
}  // namespace ddpbisect
