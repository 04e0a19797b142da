// The prefix launcher: each rank's command runs behind its node's host prefix, such as
// `ip netns exec {host}`, `docker exec {host}` or `kubectl exec {host} --`. The prefix is split
// on spaces (never given to a shell); the rank's variables travel through `env` on the far side.
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
      ProcessSpec p = on_host(host, remote_argv(r, spec_.cwd, host_env(spec_, host)));
      // The prefix command itself carries the token, so the local sweep finds it too.
      p.env["DDPBISECT_TRIAL_TOKEN"] = r.process.env.at("DDPBISECT_TRIAL_TOKEN");
      p.env["DDPBISECT_LAUNCH_CLIENT"] = "1";
      out.push_back(std::move(p));
    }
    return out;
  }

  std::string cleanup(const std::string& token, const std::vector<int>& nodes) const override {
    return sweep_hosts(spec_, nodes, token,
                       [this](const std::string& h, const std::vector<std::string>& argv) {
                         return on_host(h, argv);
                       });
  }

 private:
  // argv run on `host`: behind its prefix, from here, with the driver's environment.
  ProcessSpec on_host(const std::string& host, const std::vector<std::string>& argv) const {
    ProcessSpec p{expand_prefix(spec_.prefix, host), current_environment(), ""};
    p.argv.insert(p.argv.end(), argv.begin(), argv.end());
    return p;
  }

  LauncherSpec spec_;
};

}  // namespace

std::unique_ptr<Launcher> make_prefix_launcher(const LauncherSpec& spec) {
  return std::make_unique<PrefixLauncher>(spec);
}

}  // namespace ddpbisect
