// Where diagnosis reads from: an outcome.json of ours, or paths given to `explain`.
#include <re2/re2.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "diagnose/diagnosis.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

DiagnosisInput inputs_from_outcome(const json& o) {
  DiagnosisInput in;
  for (const auto& r : o.value("ranks", json::array())) {
    RankExit x;
    x.rank = r.value("rank", 0);
    x.exit_code = r["exit_code"].is_number() ? r["exit_code"].get<int>() : -1;
    x.signal = r.value("signal_number", 0);
    x.killed_by = r["killed_by"].is_string() ? r["killed_by"].get<std::string>() : "";
    x.end_time = r.value("end_s", -1.0);
    x.last_step = r.value("last_step", -1LL);
    in.exits.push_back(x);
    for (const char* stream : {"stdout", "stderr"}) {
      std::string path = r.value(stream, "");
      if (!path.empty()) in.logs.push_back({x.rank, path, path + ".times"});
    }
  }
  std::string status = o.value("status", "");
  std::string reason = o.value("reason", "");
  if (o.contains("hang_declared_s") && o["hang_declared_s"].is_number()) {
    in.stop_kind = "hang";
    in.stop_time = o["hang_declared_s"].get<double>();
  } else if (reason.rfind("trial timeout", 0) == 0) {
    in.stop_kind = "timeout";
  }
  // Stack requests on early stop and timeout happen after the first failure; their time is the
  // first end_s of a rank ddpbisect stopped, at the latest.
  if (!in.stop_time) {
    double first_stop = -1;
    for (const auto& x : in.exits)
      if (!x.killed_by.empty() && x.end_time >= 0 && (first_stop < 0 || x.end_time < first_stop))
        first_stop = x.end_time - 1.6;  // the request precedes the kill by the dump window
    if (first_stop >= 0) in.stop_time = first_stop;
  }
  in.hang_threshold_s = o.value("hang_threshold_s", 0.0);
  return in;
}

namespace {
// The rank a file name carries: rank3.log, rank_3.err, worker-3.out, 3/stderr.log, log.3
int rank_of(const fs::path& p, const fs::path& root) {
  static const RE2 named(R"((?:rank|worker|proc|process|default)[_\-.]?(\d+))");
  static const RE2 bare(R"((?:^|[^\d])(\d+)(?:[^\d]|$))");
  std::string rel = fs::relative(p, root).string();
  std::string digits;
  if (RE2::PartialMatch(rel, named, &digits)) return std::stoi(digits);
  std::string name = p.filename().string();
  if (RE2::PartialMatch(name, bare, &digits)) return std::stoi(digits);
  std::string parent = p.parent_path().filename().string();
  if (!parent.empty() && std::all_of(parent.begin(), parent.end(), ::isdigit))
    return std::stoi(parent);
  return -1;
}

bool is_log_file(const fs::path& p) {
  std::string name = p.filename().string();
  if (name.empty() || name[0] == '.') return false;
  std::string ext = p.extension().string();
  return ext != ".times" && ext != ".json" && ext != ".yaml" && ext != ".py" && ext != ".sh";
}
}  // namespace

std::string inputs_from_paths(const std::vector<std::string>& paths, DiagnosisInput& in) {
  for (const auto& raw : paths) {
    fs::path p(raw);
    std::error_code ec;
    if (!fs::exists(p, ec)) return raw + ": no such file or directory";
    if (fs::is_regular_file(p, ec)) {
      if (p.filename() == "outcome.json") {
        std::ifstream f(p);
        auto o = json::parse(f, nullptr, false);
        if (o.is_discarded()) return raw + ": not valid JSON";
        auto sub = inputs_from_outcome(o);
        in.logs.insert(in.logs.end(), sub.logs.begin(), sub.logs.end());
        in.exits = sub.exits;
        in.stop_kind = sub.stop_kind;
        in.stop_time = sub.stop_time;
        in.hang_threshold_s = sub.hang_threshold_s;
      } else if (p.filename() == "error.json") {
        in.error_files.push_back(p.string());
        in.error_file_ranks.push_back(rank_of(p, p.parent_path().parent_path()));
      } else {
        in.logs.push_back({-1, p.string(), ""});
      }
      continue;
    }
    if (!fs::is_directory(p, ec)) return raw + ": not a file or a directory";
    // One of our trial folders.
    if (fs::exists(p / "outcome.json")) {
      std::string err = inputs_from_paths({(p / "outcome.json").string()}, in);
      if (!err.empty()) return err;
      continue;
    }
    // A torchrun --log-dir tree: keep the last attempt of each run.
    std::vector<fs::path> files;
    fs::path last_attempt;
    for (auto it =
             fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (!it->is_regular_file()) continue;
      files.push_back(it->path());
      for (auto part = it->path().parent_path(); part != p && part.has_filename();
           part = part.parent_path())
        if (part.filename().string().rfind("attempt_", 0) == 0 &&
            part.string() > last_attempt.string())
          last_attempt = part;
    }
    std::sort(files.begin(), files.end());
    size_t before = in.logs.size() + in.error_files.size();
    for (const auto& f : files) {
      if (!last_attempt.empty() && f.string().rfind(last_attempt.string() + "/", 0) != 0) continue;
      fs::path root = last_attempt.empty() ? p : last_attempt;
      int rank = rank_of(f, root);
      if (f.filename() == "error.json") {
        in.error_files.push_back(f.string());
        in.error_file_ranks.push_back(rank);
      } else if (is_log_file(f)) {
        in.logs.push_back({rank, f.string(), ""});
      }
    }
    if (in.logs.size() + in.error_files.size() == before)
      return raw + ": no log files in this folder";
  }
  return "";
}

}  // namespace ddpbisect
