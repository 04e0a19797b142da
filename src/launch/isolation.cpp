#include "launch/isolation.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <mutex>

#include "common/notice.hpp"
#include "launch/rank_plan.hpp"

namespace fs = std::filesystem;

namespace ddpbisect {

std::string isolate_path() {
  return companion_path("DDPBISECT_ISOLATE", "ddpbisect-isolate");
}

std::vector<std::string> isolate_argv(const Spec& spec, const std::string& trial_dir,
                                      const std::vector<std::string>& argv) {
  if (!spec.command) return argv;
  static const std::string helper = isolate_path();
  std::error_code ec;
  if (!fs::exists(helper, ec)) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      notice("ddpbisect: warning: " + isolate_path() +
             " not found: trials share the working folder (what one writes there, the next one "
             "sees)");
    });
    return argv;
  }
  std::vector<std::string> out = {
      helper,   "--dir",  (fs::path(trial_dir) / "isolation").string(), "--cwd", spec.command->cwd,
      "--keep", trial_dir};
  for (const auto& s : spec.command->state) out.insert(out.end(), {"--state", s});
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

namespace {
// An overlay whiteout (a deleted file) is a 0:0 character device.
bool whiteout(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == 0;
}
}  // namespace

std::vector<std::string> trial_written_files(const Spec& spec, const std::string& trial_dir,
                                             size_t cap) {
  std::vector<std::string> out;
  if (!spec.command) return out;
  std::error_code ec;
  for (const auto& host : fs::directory_iterator(fs::path(trial_dir) / "isolation", ec)) {
    std::vector<std::pair<fs::path, fs::path>> uppers = {
        {host.path() / "upper", spec.command->cwd}};
    for (size_t i = 0; i < spec.command->state.size(); ++i) {
      uppers.push_back({host.path() / ("upper.state" + std::to_string(i)), spec.command->state[i]});
      uppers.push_back({host.path() / ("state" + std::to_string(i)), spec.command->state[i]});
    }
    for (const auto& [upper, real] : uppers) {
      if (!fs::is_directory(upper, ec)) continue;
      for (auto it = fs::recursive_directory_iterator(upper, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory(ec) && !whiteout(it->path())) continue;
        if (out.size() >= cap) return out;
        fs::path rel = it->path().lexically_relative(upper);
        std::string shown = (fs::path(real) / rel).string();
        if (upper.filename().string().rfind("state", 0) == 0) shown = real;  // a state file
        out.push_back(shown + (whiteout(it->path()) ? " (deleted)" : ""));
      }
    }
  }
  return out;
}

}  // namespace ddpbisect
