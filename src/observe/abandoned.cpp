#include "observe/abandoned.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/json_util.hpp"
#include "launch/cgroup.hpp"
#include "launch/process.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace ddpbisect {

namespace {

const char* kFile = "live.json";

// Field 22 of /proc/PID/stat: when the process started (clock ticks since boot); "" if gone.
// With the pid it names one process for good: a reused pid has another start time.
std::string start_time(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(in, line)) return "";
  size_t paren = line.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream rest(line.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
  }
  return field;
}

bool driver_alive(const json& j) {
  const std::string pid = std::to_string(j.value("driver_pid", 0));
  const std::string started = start_time(pid);
  return !started.empty() && started == j.value("driver_start", "");
}

}  // namespace

void write_live_record(const std::string& trial_dir, const LiveRecord& r) {
  const std::string self = std::to_string(getpid());
  json j = {{"token", r.token}, {"cgroups", r.cgroups},   {"launcher", r.launcher},
            {"nodes", r.nodes}, {"driver_pid", getpid()}, {"driver_start", start_time(self)}};
  const fs::path path = fs::path(trial_dir) / kFile;
  std::ofstream(path.string() + ".tmp") << json_text(j) << "\n";
  fs::rename(path.string() + ".tmp", path);
}

void remove_live_record(const std::string& trial_dir) {
  std::error_code ec;
  fs::remove(fs::path(trial_dir) / kFile, ec);
}

std::vector<std::string> sweep_abandoned_trials(const std::string& root, const Launcher& launcher) {
  static std::mutex m;
  static std::set<std::string> swept;
  std::lock_guard<std::mutex> lock(m);
  std::error_code ec;
  const std::string key = fs::weakly_canonical(root, ec).string();
  if (!swept.insert(key).second) return {};
  std::vector<std::string> notes;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "trials", ec)) {
    const fs::path file = e.path() / kFile;
    std::ifstream in(file);
    if (!in) continue;
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object() || driver_alive(j)) continue;
    const std::string token = j.value("token", "");
    int killed = kill_cgroup_dirs(j.value("cgroups", std::vector<std::string>{}));
    if (!token.empty()) killed = std::max(killed, sweep_token(token));
    std::string note = e.path().filename().string() + ": its driver is gone; killed " +
                       std::to_string(killed) + " leftover process(es) here";
    if (j.value("launcher", "") == launcher.name() && !token.empty()) {
      std::string hosts = launcher.cleanup(token, j.value("nodes", std::vector<int>{}));
      if (!hosts.empty()) note += "; hosts: " + hosts;
    }
    reap_orphans();
    fs::remove(file, ec);
    notes.push_back(note);
  }
  return notes;
}

}  // namespace ddpbisect
