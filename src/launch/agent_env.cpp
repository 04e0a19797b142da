#include "launch/agent_env.hpp"

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace ddpbisect {

std::string agent_dir() {
  if (const char* p = std::getenv("DDPBISECT_AGENT_DIR"); p && *p) return p;
  std::error_code ec;
  std::vector<fs::path> candidates;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path() / "python" / "agent");
    candidates.push_back(self.parent_path().parent_path() / "share" / "ddpbisect" / "python" /
                         "agent");
  }
#ifdef DDPBISECT_SOURCE_DIR
  candidates.push_back(fs::path(DDPBISECT_SOURCE_DIR) / "python" / "agent");
#endif
  for (const auto& c : candidates)
    if (fs::exists(c / "sitecustomize.py", ec)) return c.string();
  return "";
}

void add_agent_env(const Spec& spec, const TrialConfig& config,
                   std::map<std::string, std::string>& env) {
  if (!spec.command || !spec.command->agent) return;
  const CommandWorkload& c = *spec.command;
  static const std::string dir = agent_dir();
  if (!dir.empty()) {
    // The agent first, then the helper module (python/ddpbisect.py) when it is beside it, then
    // the user's entries.
    std::string path = dir;
    const fs::path helper_dir = fs::path(dir).parent_path();
    std::error_code ec;
    if (fs::exists(helper_dir / "ddpbisect.py", ec)) path += ":" + helper_dir.string();
    auto it = env.find("PYTHONPATH");
    env["PYTHONPATH"] = it == env.end() || it->second.empty() ? path : path + ":" + it->second;
  }
  env["DDPBISECT_AGENT"] = "1";
  env["DDPBISECT_STACK_SIGNAL"] = std::to_string(kAgentStackSignal);
  if (c.samples_auto) {
    env["DDPBISECT_SAMPLES_AUTO"] = "1";
    // Nothing known yet (the measuring run): unset means every sample; empty would mean none.
    if (config.samples.empty()) env.erase("DDPBISECT_SAMPLES");
  }
  if (c.steps_auto) {
    auto it = config.params.find("steps");
    if (it != config.params.end()) env["DDPBISECT_MAX_STEPS"] = std::to_string(it->second);
  }
}

}  // namespace ddpbisect
