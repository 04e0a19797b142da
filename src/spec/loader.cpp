// Spec loader: walks the YAML tree once, converting and checking every key. Errors are collected
// (never thrown) so one run reports all of them, each anchored at the node that caused it.
#include "spec/loader.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/category_names.hpp"
#include "common/text.hpp"
#include "spec/launchers.hpp"
#include "spec/passes.hpp"
#include "spec/placeholders.hpp"

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

const std::vector<std::string>& fault_kinds() {
  static const std::vector<std::string> v = {"raise",
                                             "abort",
                                             "segfault",
                                             "sigkill",
                                             "exit",
                                             "hang",
                                             "collective_mismatch",
                                             "size_mismatch",
                                             "nan",
                                             "unused_parameter",
                                             "oom",
                                             "straggler",
                                             "divergence",
                                             "missing_file"};
  return v;
}

static const std::vector<std::string> kBuiltinParams = {"steps",      "batch_size", "hidden",
                                                        "grad_accum", "eval_every", "threads"};

const Stage* Spec::find_stage(const std::string& n) const {
  for (const auto& s : stages)
    if (s.name == n) return &s;
  return nullptr;
}

namespace {

// Words people write for a value they mean, where the vocabulary is small enough that a typo
// distance cannot find it: `device: gpu` means cuda. A pair is offered only where its value is
// allowed (suggest() in common/text.hpp).
const std::vector<std::pair<std::string, std::string>>& value_meanings() {
  static const std::vector<std::pair<std::string, std::string>> v = {
      {"gpu", "cuda"},
      {"gpus", "cuda"},
      {"nvidia", "cuda"},
      {"nccl", "cuda"},
      {"cuda:0", "cuda"},
      {"host", "cpu"},
      {"gloo", "cpu"},
      {"exception", "raise"},
      {"error", "raise"},
      {"throw", "raise"},
      {"crash", "segfault"},
      {"sigsegv", "segfault"},
      {"kill", "sigkill"},
      {"killed", "sigkill"},
      {"sigabrt", "abort"},
      {"deadlock", "hang"},
      {"stuck", "hang"},
      {"timeout", "hang"},
      {"mismatch", "collective_mismatch"},
      {"slow", "straggler"},
      {"inf", "nan"},
      {"localhost", "local"},
      {"srun", "slurm"},
      {"sbatch", "slurm"},
      {"salloc", "slurm"},
      {"docker", "prefix"},
      {"kubectl", "prefix"},
      {"netns", "prefix"},
      {"exact", "strict"},
      {"fuzzy", "loose"},
      {"lenient", "loose"},
      {"delta", "ddmin"},
      {"random", "synthetic"},
      {"generated", "synthetic"},
      {"bin", "binary"},
      {"regress", "regression"},
      {"classify", "classification"}};
  return v;
}

// "; did you mean 'X'?" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates,
                         const char* open = "'", const char* close = "'") {
  std::string guess = suggest(word, candidates, value_meanings());
  return guess.empty() ? "" : std::string("; did you mean ") + open + guess + close + "?";
}

// Walks YAML nodes, converting values and recording located errors.
class Reader {
 public:
  Reader(std::string file, Diagnostics& errors) : file_(std::move(file)), errors_(errors) {}

  void error(const YAML::Mark& m, const std::string& path, const std::string& msg,
             int column_offset = 0) {
    Diagnostic d;
    d.file = file_;
    if (!m.is_null()) {
      d.line = m.line + 1;
      d.column = m.column + 1 + column_offset;
    }
    d.path = path;
    d.message = msg;
    errors_.push_back(std::move(d));
  }
  void error(const YAML::Node& at, const std::string& path, const std::string& msg) {
    error(at.Mark(), path, msg);
  }

  static std::string describe(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Null:
        return "nothing (null)";
      case YAML::NodeType::Sequence:
        return "a list";
      case YAML::NodeType::Map:
        return "a mapping";
      case YAML::NodeType::Scalar:
        return "'" + n.Scalar() + "'";
      default:
        return "nothing";
    }
  }

  bool expect_map(const YAML::Node& n, const std::string& path) {
    if (n.IsMap()) return true;
    error(n, path, "expected a mapping, found " + describe(n));
    return false;
  }

  // Flags unknown and duplicate keys; suggests the closest known key.
  void check_keys(const YAML::Node& map, const std::string& path,
                  const std::vector<std::string>& known) {
    std::map<std::string, int> seen;
    for (const auto& kv : map) {  // by value: yaml-cpp iterators yield temporaries
      const YAML::Node key = kv.first;
      std::string k = key.IsScalar() ? key.Scalar() : "";
      std::string kp = join_path(path, k);
      if (!key.IsScalar()) {
        error(key, path, "keys must be plain names, found " + describe(key));
        continue;
      }
      if (auto prev = seen.find(k); prev != seen.end()) {
        error(key, kp, "duplicate key (first given on line " + std::to_string(prev->second) + ")");
        continue;
      }
      seen[k] = key.Mark().line + 1;
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        std::string hint = did_you_mean(k, known);
        std::string msg = "unknown key";
        if (!hint.empty())
          msg += hint;
        else
          msg += " (known keys: " + join(known, ", ") + ")";
        error(key, kp, msg);
      }
    }
  }

  std::optional<int64_t> integer(const YAML::Node& n, const std::string& path, int64_t min,
                                 int64_t max = INT64_MAX) {
    int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v)) {
      error(n, path, "expected an integer, found " + describe(n));
      return std::nullopt;
    }
    if (v < min || v > max) {
      std::string want = min == 1 && max == INT64_MAX   ? "a positive integer"
                         : min == 0 && max == INT64_MAX ? "a non-negative integer"
                         : max == INT64_MAX             ? "an integer >= " + std::to_string(min)
                                            : "an integer from " + std::to_string(min) + " to " +
                                                  std::to_string(max);
      error(n, path, "expected " + want + ", found " + std::to_string(v));
      return std::nullopt;
    }
    return v;
  }

  std::optional<double> number(const YAML::Node& n, const std::string& path, double min,
                               double max) {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) {
      error(n, path, "expected a number, found " + describe(n));
      return std::nullopt;
    }
    if (!(v >= min && v <= max)) {
      std::ostringstream os;
      os << "expected a number from " << min << " to " << max << ", found " << n.Scalar();
      error(n, path, os.str());
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::string> string(const YAML::Node& n, const std::string& path,
                                    bool allow_empty = false) {
    if (!n.IsScalar()) {
      error(n, path, "expected a string, found " + describe(n));
      return std::nullopt;
    }
    if (!allow_empty && n.Scalar().empty()) {
      error(n, path, "expected a non-empty string");
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<bool> boolean(const YAML::Node& n, const std::string& path) {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      error(n, path, "expected true or false, found " + describe(n));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::string> one_of(const YAML::Node& n, const std::string& path,
                                    const std::vector<std::string>& allowed) {
    auto s = string(n, path);
    if (!s) return std::nullopt;
    if (std::find(allowed.begin(), allowed.end(), *s) == allowed.end()) {
      error(n, path,
            "expected one of " + join(allowed, ", ") + ", found '" + *s + "'" +
                did_you_mean(*s, allowed));
      return std::nullopt;
    }
    return s;
  }

  std::optional<Millis> duration(const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) {
      if (auto d = parse_duration(n.Scalar()); d && d->count() > 0) return d;
    }
    error(n, path,
          "expected a positive duration such as 500ms, 90s, 5m or 2h, found " + describe(n));
    return std::nullopt;
  }

  // A list of strings; `allowed` (when non-empty) restricts the values; duplicates are errors.
  std::optional<std::vector<std::string>> names(const YAML::Node& n, const std::string& path,
                                                const std::vector<std::string>& allowed = {}) {
    if (!n.IsSequence()) {
      error(n, path, "expected a list of names, found " + describe(n));
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool ok = true;
    for (size_t i = 0; i < n.size(); ++i) {
      std::string ip = path + "[" + std::to_string(i) + "]";
      auto s = allowed.empty() ? string(n[i], ip) : one_of(n[i], ip, allowed);
      if (!s) {
        ok = false;
        continue;
      }
      if (std::find(out.begin(), out.end(), *s) != out.end()) {
        error(n[i], ip, "'" + *s + "' is listed twice");
        ok = false;
        continue;
      }
      out.push_back(*s);
    }
    if (!ok) return std::nullopt;
    return out;
  }

  std::optional<std::vector<int64_t>> integers(const YAML::Node& n, const std::string& path,
                                               int64_t min, int64_t max = INT64_MAX) {
    if (n.IsScalar()) {
      auto v = integer(n, path, min, max);
      if (!v) return std::nullopt;
      return std::vector<int64_t>{*v};
    }
    if (!n.IsSequence()) {
      error(n, path, "expected a list of integers, found " + describe(n));
      return std::nullopt;
    }
    std::vector<int64_t> out;
    bool ok = true;
    for (size_t i = 0; i < n.size(); ++i) {
      auto v = integer(n[i], path + "[" + std::to_string(i) + "]", min, max);
      if (v)
        out.push_back(*v);
      else
        ok = false;
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // Sample indices: a count (N means 0..N-1), a range string "0-36,38-511", or a list of indices.
  std::optional<IndexSet> samples(const YAML::Node& n, const std::string& path, bool count_ok) {
    if (n.IsSequence()) {
      auto v = integers(n, path, 0, IndexSet::kMaxIndex);
      if (!v) return std::nullopt;
      return IndexSet::from_indices(*v);
    }
    if (!n.IsScalar()) {
      error(n, path, "expected a sample count or index ranges like 0-36,38-511");
      return std::nullopt;
    }
    int64_t count = 0;
    // A plain number is a count; a quoted one ("37") is a single index.
    if (count_ok && n.Tag() != "!" && YAML::convert<int64_t>::decode(n, count)) {
      if (count < 1 || count > IndexSet::kMaxIndex + 1) {
        error(n, path,
              (count < 1
                   ? "expected a positive sample count"
                   : "expected at most " + std::to_string(IndexSet::kMaxIndex + 1) + " samples") +
                  std::string(", found ") + std::to_string(count));
        return std::nullopt;
      }
      return IndexSet::first_n(count);
    }
    std::string msg;
    size_t off = 0;
    auto set = IndexSet::parse(n.Scalar(), &msg, &off);
    if (!set) {
      error(n.Mark(), path, msg, static_cast<int>(off) + (n.Tag() == "!" ? 1 : 0));
      return std::nullopt;
    }
    if (set->empty()) {
      error(n, path, "the sample set is empty");
      return std::nullopt;
    }
    return set;
  }

  // Integer params: a mapping of name -> integer.
  std::map<std::string, int64_t> params(const YAML::Node& n, const std::string& path,
                                        const std::vector<std::string>& allowed) {
    std::map<std::string, int64_t> out;
    if (!expect_map(n, path)) return out;
    if (!allowed.empty()) check_keys(n, path, allowed);
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) continue;
      std::string k = kv.first.Scalar();
      if (!valid_name(k)) {
        error(kv.first, join_path(path, k),
              "param names are letters, digits and '_' and start with a letter");
        continue;
      }
      if (auto v = integer(kv.second, join_path(path, k), 0)) out[k] = *v;
    }
    return out;
  }

  static bool valid_name(const std::string& k) {
    if (k.empty() || !std::isalpha(static_cast<unsigned char>(k[0]))) return false;
    return std::all_of(k.begin(), k.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
  }

  static std::string join_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  Diagnostics& errors_;
};

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
      load_workload(n, spec);
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
  std::string resolve(const std::string& p) const {
    fs::path path(p);
    return (path.is_absolute() ? path : base_dir_ / path).lexically_normal().string();
  }

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
          d.path = resolve(*v);
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
      if (auto v = r_.one_of(k, p + ".mode", {"loader", "collectives"})) f.mode = *v;
    if (auto k = n["kind"]) {
      if (auto v = r_.one_of(k, p + ".kind", fault_kinds())) f.kind = *v;
    } else {
      r_.error(n, p + ".kind", "missing: one of " + join(fault_kinds(), ", "));
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
    if (f.kind == "missing_file" && f.path.empty())
      r_.error(n, p + ".path", "missing: a missing_file fault names the node-local path it opens");
    if (f.kind == "unused_parameter") {
      if (f.component.empty())
        r_.error(n, p + ".component", "missing: the component whose parameters get no gradient");
      else if (std::find(w.model.begin(), w.model.end(), f.component) == w.model.end() &&
               !w.model.empty())
        r_.error(n["component"], p + ".component",
                 "'" + f.component + "' is not in workload.builtin.model");
    }
    if (f.kind == "straggler" && f.delay.count() == 0) f.delay = Millis(2000);
    if (f.kind == "hang" && f.mode.empty()) f.mode = "loader";
    if (auto rq = n["requires"]) f.requires_ = load_requires(rq, p + ".requires", w);
    return f;
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
        c.cwd = resolve(*v);
        std::error_code ec;
        if (!fs::is_directory(c.cwd, ec))
          r_.error(k, "workload.cwd", "no such directory: " + c.cwd);
      }
    }
    if (auto k = n["env"]) c.env = env_map(k, "workload.env");
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
        for (const auto& s : *v) c.state.push_back(resolve(s));
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

  // Variables: a map of names (no '=') to strings.
  std::map<std::string, std::string> env_map(const YAML::Node& n, const std::string& path) {
    std::map<std::string, std::string> out;
    if (!r_.expect_map(n, path)) return out;
    for (const auto& kv : n) {
      std::string name = kv.first.Scalar();
      if (name.empty() || name.find('=') != std::string::npos)
        r_.error(kv.first, path, "bad variable name '" + name + "'");
      else if (auto v = r_.string(kv.second, path + "." + name, true))
        out[name] = *v;
    }
    return out;
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
          spec.launcher.host_env[host] = env_map(kv.second, "launcher.env." + host);
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
