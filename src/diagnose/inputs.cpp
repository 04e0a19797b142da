// Where diagnosis reads from: an outcome.json of ours, or paths given to `explain`.
#include <re2/re2.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/json_util.hpp"
#include "common/text.hpp"
#include "diagnose/diagnosis.hpp"
#include "diagnose/flight_recorder.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

using nlohmann::json;

namespace {

std::optional<std::string> add_paths(const std::vector<std::string>& paths, DiagnosisInput& in);

// The rank a file name carries: rank3.log, rank_3.err, rank.3/stderr, default3, 3.log, log.3,
// 3/stderr.log (torchrun's tree: the local rank), worker_3.log. "node1" names a host, and
// "slurm-884301.out" a job. A name's rank is only a default: a file that turns out to be a
// launcher's console (log_reader.cpp) loses it.
std::optional<int> rank_of(const fs::path& p, const fs::path& root) {
  static const RE2 named(
      R"((?i)(?:^|[^a-z])(?:rank|worker|proc|process|default)[_\-.]?(\d{1,5})(?:[^\d]|$))");
  static const RE2 bare_stem(R"(^(\d{1,5})$)");
  static const RE2 log_suffix(R"(^(?:log|out|err|stdout|stderr)\.(\d{1,5})$)");
  std::string rel = fs::relative(p, root).string();
  int r = 0;
  if (RE2::PartialMatch(rel, named, &r)) return r;
  std::string stem = p.stem().string(), name = p.filename().string();
  if (RE2::FullMatch(stem, bare_stem, &r) || RE2::FullMatch(name, log_suffix, &r)) return r;
  std::string parent = p.parent_path().filename().string();
  if (p.parent_path() != root && RE2::FullMatch(parent, bare_stem, &r)) return r;
  return std::nullopt;
}

// The rank at the end of a Flight Recorder dump's name: fr_trace_rank_1, comm_lib_trace_rank_1.
std::optional<int> trailing_rank(const fs::path& p) {
  int r = 0;
  if (RE2::PartialMatch(p.filename().string(), R"((\d{1,5})(?:\.\w+)?$)", &r)) return r;
  return std::nullopt;
}

bool starts_as_pickle(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char head[2] = {0, 0};
  in.read(head, 2);
  return in.gcount() == 2 && looks_like_pickle(std::string_view(head, 2));
}

bool is_agent_trace(const fs::path& p) {
  std::string name = p.filename().string();
  return starts_with(name, "collectives.") && ends_with(name, ".jsonl");
}

bool is_log_file(const fs::path& p) {
  std::string name = p.filename().string();
  if (name.empty() || name[0] == '.') return false;
  std::string ext = p.extension().string();
  return ext != ".times" && ext != ".json" && ext != ".jsonl" && ext != ".yaml" && ext != ".py" &&
         ext != ".sh";
}

// One file found in a folder given to explain (or the folder itself given).
void add_file(const fs::path& f, const fs::path& root, DiagnosisInput& in) {
  if (f.filename() == "error.json") {
    in.error_files.push_back(f.string());
    in.error_file_ranks.push_back(rank_of(f, root));
  } else if (is_agent_trace(f)) {
    in.agent_traces.push_back(f.string());
  } else if (starts_as_pickle(f)) {
    in.flight_recorder.push_back({trailing_rank(f), f.string(), ""});
  } else if (is_log_file(f)) {
    in.logs.push_back({rank_of(f, root), f.string(), "", ""});
  }
}

// The agent's trace files and Flight Recorder dumps a trial folder of ours holds.
void add_trial_extras(const fs::path& dir, DiagnosisInput& in) {
  std::error_code ec;
  for (const char* sub : {"agent", "fr"}) {
    if (!fs::is_directory(dir / sub, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir / sub, ec))
      if (e.is_regular_file()) add_file(e.path(), dir / sub, in);
  }
}

std::optional<std::string> add_folder(const fs::path& p, const std::string& raw,
                                      DiagnosisInput& in) {
  // A torchrun --log-dir tree: keep the last attempt of each run.
  std::error_code ec;
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
  size_t before =
      in.logs.size() + in.error_files.size() + in.flight_recorder.size() + in.agent_traces.size();
  for (const auto& f : files) {
    bool in_attempt = f.string().find("/attempt_") != std::string::npos;
    if (!last_attempt.empty() && in_attempt &&
        f.string().rfind(last_attempt.string() + "/", 0) != 0)
      continue;
    add_file(f, in_attempt && !last_attempt.empty() ? last_attempt : p, in);
  }
  if (in.logs.size() + in.error_files.size() + in.flight_recorder.size() + in.agent_traces.size() ==
      before)
    return raw + ": no log files in this folder";
  return std::nullopt;
}

}  // namespace

namespace {
// A path an outcome.json recorded (relative to where the run started), found again from the
// outcome's own folder when the run started elsewhere.
std::string rebase(const std::string& path, const std::string& recorded_dir,
                   const std::string& folder) {
  std::error_code ec;
  if (folder.empty() || path.empty() || fs::exists(path, ec)) return path;
  fs::path p(path), dir(recorded_dir);
  fs::path rel = !recorded_dir.empty() && starts_with(path, recorded_dir)
                     ? fs::relative(p, dir)
                     : p.parent_path().filename() / p.filename();
  fs::path found = fs::path(folder) / rel;
  return fs::exists(found, ec) ? found.string() : path;
}
}  // namespace

// Every field read with checks: an outcome.json may be torn, edited or from another version; a
// field that is missing or of another type reads as unknown.
DiagnosisInput inputs_from_outcome(const json& o, const std::string& folder) {
  DiagnosisInput in;
  std::string recorded_dir = json_field(o, "dir", "");
  const json& ranks = json_member(o, "ranks");
  for (const auto& r : ranks.is_array() ? ranks : json::array()) {
    RankExit x;
    x.rank = json_field(r, "rank", 0);
    x.exit_code = json_field(r, "exit_code", -1);
    x.signal = json_field(r, "signal_number", 0);
    x.killed_by = json_field(r, "killed_by", "");
    x.end_time = json_field(r, "end_s", -1.0);
    x.last_step = json_field<long long>(r, "last_step", -1);
    in.exits.push_back(x);
    for (const char* stream : {"stdout", "stderr"}) {
      std::string path = rebase(json_field(r, stream, ""), recorded_dir, folder);
      if (!path.empty()) in.logs.push_back({x.rank, path, path + ".times", ""});
    }
  }
  std::string reason = json_field(o, "reason", "");
  if (const json& hang = json_member(o, "hang_declared_s"); hang.is_number()) {
    in.stop = StopReason::Hang;
    in.stop_time = hang.get<double>();
  } else if (reason.rfind("trial timeout", 0) == 0) {
    in.stop = StopReason::Timeout;
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
  in.hang_threshold_s = json_field(o, "hang_threshold_s", 0.0);
  std::string dir = folder.empty() ? recorded_dir : folder;
  if (!dir.empty()) add_trial_extras(dir, in);
  return in;
}

PathInputs inputs_from_paths(const std::vector<std::string>& paths) {
  PathInputs out;
  if (auto err = add_paths(paths, out.input)) out.error = *err;
  return out;
}

namespace {
std::optional<std::string> add_paths(const std::vector<std::string>& paths, DiagnosisInput& in) {
  for (const auto& raw : paths) {
    fs::path p(raw);
    std::error_code ec;
    if (!fs::exists(p, ec)) return raw + ": no such file or directory";
    if (fs::is_regular_file(p, ec)) {
      if (p.filename() == "outcome.json") {
        std::ifstream f(p);
        auto o = json::parse(f, nullptr, false);
        if (o.is_discarded()) return raw + ": not valid JSON";
        if (!o.is_object()) return raw + ": not a trial outcome (expected a JSON object)";
        auto sub = inputs_from_outcome(o, p.parent_path().string());
        in.logs.insert(in.logs.end(), sub.logs.begin(), sub.logs.end());
        in.flight_recorder.insert(in.flight_recorder.end(), sub.flight_recorder.begin(),
                                  sub.flight_recorder.end());
        in.agent_traces.insert(in.agent_traces.end(), sub.agent_traces.begin(),
                               sub.agent_traces.end());
        in.exits = sub.exits;
        in.stop = sub.stop;
        in.stop_time = sub.stop_time;
        in.hang_threshold_s = sub.hang_threshold_s;
      } else if (p.filename() == "error.json") {
        in.error_files.push_back(p.string());
        in.error_file_ranks.push_back(rank_of(p, p.parent_path().parent_path()));
      } else {
        size_t before = in.logs.size();
        add_file(p, p.parent_path(), in);
        // A single log given by name is read whatever its extension.
        if (in.logs.size() == before && !is_agent_trace(p) && !starts_as_pickle(p))
          in.logs.push_back({rank_of(p, p.parent_path()), p.string(), "", ""});
      }
      continue;
    }
    if (!fs::is_directory(p, ec)) return raw + ": not a file or a directory";
    if (fs::exists(p / "outcome.json")) {
      if (auto err = add_paths({(p / "outcome.json").string()}, in)) return err;
      continue;
    }
    if (auto err = add_folder(p, raw, in)) return err;
  }
  return std::nullopt;
}
}  // namespace

}  // namespace ddpbisect
