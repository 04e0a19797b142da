// The prefix launcher: each rank's command runs behind its node's host prefix, such as
// `ip netns exec {host}`, `docker exec {host}` or `kubectl exec {host} --`. The prefix is split
// on spaces (never given to a shell); the rank's variables travel through `env` on the far side.
#include <set>

#include "launch/process.hpp"
#include "launch/remote.hpp"

namespace ddpbisect {

namespace {

class PrefixLauncher : public Launcher {
 public:
  explicit PrefixLauncher(LauncherSpec spec) : spec_(std::move(spec)) {}
  std::string name() const override { return "prefix"; }
  std::string master_addr() const override {
    return spec_.master_addr.empty() ? "127.0.0.1" : spec_.master_addr;
  }

  std::vector<ProcessSpec> wrap(const std::vector<RankSlot>& ranks) const override {
    std::vector<ProcessSpec> out;
    for (const auto& r : ranks) {
      const std::string& host = host_of(spec_, r.node);
      auto it = spec_.host_env.find(host);
      ProcessSpec p;
      p.argv = expand_prefix(spec_.prefix, host);
      auto remote = remote_argv(
          r, spec_.cwd,
          it == spec_.host_env.end() ? std::map<std::string, std::string>{} : it->second);
      p.argv.insert(p.argv.end(), remote.begin(), remote.end());
      // The prefix command itself runs here, with the driver's environment plus the token, so
      // that the local sweep finds it too.
      p.env = current_environment();
      p.env["DDPBISECT_TRIAL_TOKEN"] = r.process.env.at("DDPBISECT_TRIAL_TOKEN");
      out.push_back(std::move(p));
    }
    return out;
  }

  std::string cleanup(const std::string& token, const std::vector<int>& nodes) const override {
    std::set<std::string> hosts;
    for (int n : nodes) hosts.insert(host_of(spec_, n));
    std::string notes;
    for (const auto& host : hosts) {
      ProcessSpec p{expand_prefix(spec_.prefix, host), current_environment(), ""};
      p.argv.insert(p.argv.end(), {"sh", "-c", remote_sweep_script(token)});
      std::string out;
      if (int rc = run_capture(p, 20, out); rc != 0)
        notes += "cleanup on " + host + " exited " + std::to_string(rc) + ": " + out + "\n";
    }
    return notes;
  }

 private:
  LauncherSpec spec_;
};

}  // namespace

std::unique_ptr<Launcher> make_prefix_launcher(const LauncherSpec& spec) {
  return std::make_unique<PrefixLauncher>(spec);
}

}  // namespace ddpbisect
