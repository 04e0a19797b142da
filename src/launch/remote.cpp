#include "launch/remote.hpp"

#include <set>
#include <stdexcept>

#include "common/text.hpp"
#include "launch/process.hpp"

namespace ddpbisect {

std::vector<std::string> remote_argv(const RankSlot& rank, const std::string& cwd,
                                     const std::map<std::string, std::string>& host_env) {
  std::map<std::string, std::string> driver = current_environment();
  std::vector<std::string> out = {"env"};
  std::string dir = cwd.empty() ? rank.process.cwd : cwd;
  if (!dir.empty()) out.insert(out.end(), {"-C", dir});
  auto env = rank.process.env;
  for (const auto& [k, v] : host_env) env[k] = v;
  for (const auto& [k, v] : env) {
    auto it = driver.find(k);
    bool ours = starts_with(k, "DDPBISECT_") || host_env.count(k);
    if (ours || it == driver.end() || it->second != v) out.push_back(k + "=" + v);
  }
  out.insert(out.end(), rank.process.argv.begin(), rank.process.argv.end());
  return out;
}

std::string remote_sweep_script(const std::string& token, int sig) {
  // The token is hex (random_token), so it needs no quoting inside the script. The launcher's
  // own clients (ssh, srun, the prefix command) carry the token too, for the local sweep, and are
  // marked: where a host shares this machine's /proc, a stack request must not hit them.
  return "for d in /proc/[0-9]*; do "
         "grep -qsxz 'DDPBISECT_TRIAL_TOKEN=" +
         token +
         "' \"$d/environ\" && ! grep -qsxz 'DDPBISECT_LAUNCH_CLIENT=1' \"$d/environ\" && kill -" +
         std::to_string(sig) +
         " \"${d#/proc/}\" 2>/dev/null; "
         "done; exit 0";
}

std::vector<std::string> expand_prefix(const std::string& tmpl, const std::string& host) {
  std::vector<std::string> out;
  for (const auto& word : split(tmpl, ' ')) {
    if (word.empty()) continue;
    std::string w = word;
    replace_all(w, "{host}", host);
    out.push_back(w);
  }
  return out;
}

const std::map<std::string, std::string>& host_env(const LauncherSpec& spec,
                                                   const std::string& host) {
  static const std::map<std::string, std::string> none;
  auto it = spec.host_env.find(host);
  return it == spec.host_env.end() ? none : it->second;
}

std::string sweep_hosts(const LauncherSpec& spec, const std::vector<int>& nodes,
                        const std::string& token, const HostCommand& on_host, int sig) {
  std::set<std::string> hosts;
  for (int n : nodes) hosts.insert(host_of(spec, n));
  std::string notes;
  for (const auto& host : hosts) {
    std::string out;
    int rc = run_capture(on_host(host, {"sh", "-c", remote_sweep_script(token, sig)}), 30, out);
    if (rc != 0)
      notes += "cleanup on " + host + " exited " + std::to_string(rc) + ": " + out + "\n";
  }
  return notes;
}

const std::string& host_of(const LauncherSpec& spec, int node) {
  if (node < 0 || node >= static_cast<int>(spec.hosts.size()))
    throw std::out_of_range("node " + std::to_string(node) + " has no host: launcher.hosts lists " +
                            std::to_string(spec.hosts.size()));
  return spec.hosts[static_cast<size_t>(node)];
}

std::vector<ProcessSpec> RemoteLauncher::wrap(const std::vector<RankSlot>& ranks) const {
  std::vector<ProcessSpec> out;
  for (const auto& r : ranks) {
    ProcessSpec p = client(r);
    p.env["DDPBISECT_TRIAL_TOKEN"] = r.process.env.at("DDPBISECT_TRIAL_TOKEN");
    p.env["DDPBISECT_LAUNCH_CLIENT"] = "1";
    out.push_back(std::move(p));
  }
  return out;
}

std::string RemoteLauncher::cleanup(const std::string& token, const std::vector<int>& nodes) const {
  if (!has_hosts()) return "";
  return sweep_hosts(spec_, nodes, token,
                     [this](const std::string& h, const auto& argv) { return on_host(h, argv); });
}

bool RemoteLauncher::signal_remote(const std::string& token, const std::vector<int>& nodes,
                                   int sig) const {
  if (!clients_relay_signals() || !has_hosts()) return false;
  sweep_hosts(
      spec_, nodes, token,
      [this](const std::string& h, const auto& argv) { return on_host(h, argv); }, sig);
  return true;
}

}  // namespace ddpbisect
