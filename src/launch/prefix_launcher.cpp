// The prefix launcher: each rank's command runs behind its node's host prefix, such as
// `ip netns exec {host}`, `docker exec {host}` or `kubectl exec {host} --`. The prefix is split
// on spaces (never given to a shell); the rank's variables travel through `env` on the far side.
#include "launch/process.hpp"
#include "launch/remote.hpp"

namespace ddpbisect {

namespace {

class PrefixLauncher : public RemoteLauncher {
 public:
  using RemoteLauncher::RemoteLauncher;
  std::string name() const override { return "prefix"; }
  std::string master_addr() const override {
    return spec_.master_addr.empty() ? "127.0.0.1" : spec_.master_addr;
  }

 protected:
  ProcessSpec client(const RankSlot& r) const override {
    const std::string& host = host_of(spec_, r.node);
    return on_host(host, remote_argv(r, spec_.cwd, host_env(spec_, host)));
  }
  // argv run on `host`: behind its prefix, from here, with the driver's environment.
  ProcessSpec on_host(const std::string& host,
                      const std::vector<std::string>& argv) const override {
    ProcessSpec p{expand_prefix(spec_.prefix, host), current_environment(), ""};
    p.argv.insert(p.argv.end(), argv.begin(), argv.end());
    return p;
  }
};

}  // namespace

std::unique_ptr<Launcher> make_prefix_launcher(const LauncherSpec& spec) {
  return std::make_unique<PrefixLauncher>(spec);
}

}  // namespace ddpbisect
