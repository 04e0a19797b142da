// The spec loader's YAML reader: converts and checks one value at a time, recording every error
// at its line and column (never throwing). Shared by loader.cpp and workload_loader.cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/diagnostic.hpp"
#include "common/text.hpp"
#include "spec/spec.hpp"

namespace ddpbisect::spec_yaml {

// Words people write for a value they mean, where the vocabulary is small enough that a typo
// distance cannot find it: `device: gpu` means cuda. A pair is offered only where its value is
// allowed (suggest() in common/text.hpp).
inline const std::vector<std::pair<std::string, std::string>>& value_meanings() {
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
inline std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates,
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

  // Variables: a map of names (no '=') to strings.
  std::map<std::string, std::string> env_map(const YAML::Node& n, const std::string& path) {
    std::map<std::string, std::string> out;
    if (!expect_map(n, path)) return out;
    for (const auto& kv : n) {
      std::string name = kv.first.Scalar();
      if (name.empty() || name.find('=') != std::string::npos)
        error(kv.first, path, "bad variable name '" + name + "'");
      else if (auto v = string(kv.second, path + "." + name, true))
        out[name] = *v;
    }
    return out;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  Diagnostics& errors_;
};

// A path a spec gives, relative to the spec's folder unless absolute.
inline std::string resolve_path(const std::filesystem::path& base, const std::string& p) {
  std::filesystem::path path(p);
  return (path.is_absolute() ? path : base / path).lexically_normal().string();
}

}  // namespace ddpbisect::spec_yaml
