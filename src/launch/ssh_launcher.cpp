// The ssh launcher: each rank runs on its node's host through ssh in batch mode (never asking
// for a password), over one shared connection per host (ControlMaster), so a trial pays the
// handshake once per host, not once per rank. The remote login shell only sees the rank's
// command with every word quoted. The output folder must be on a filesystem the hosts share
// (DDPBISECT_CONFIG and the trial folder are paths in it), as on most clusters.
#include <cstdlib>
#include <mutex>
#include <set>

#include "common/text.hpp"
#include "launch/process.hpp"
#include "launch/remote.hpp"

namespace ddpbisect {

namespace {

// Connection masters this process opened, closed at exit so that none outlives the driver.
std::mutex masters_mutex;
std::set<std::vector<std::string>> masters;  // the ssh argv prefix (options + host) of each

void close_masters() {
  std::lock_guard<std::mutex> lock(masters_mutex);
  for (auto argv : masters) {
    argv.insert(argv.end() - 1, {"-O", "exit"});
    std::string out;
    run_capture({argv, current_environment(), ""}, 10, out);
  }
  masters.clear();
}

class SshLauncher : public Launcher {
 public:
  explicit SshLauncher(LauncherSpec spec) : spec_(std::move(spec)), env_(current_environment()) {}
  std::string name() const override { return "ssh"; }
  // Ranks rendezvous at the first node's host unless the spec names an address.
  std::string master_addr() const override {
    return spec_.master_addr.empty() ? spec_.hosts.front() : spec_.master_addr;
  }

  std::vector<ProcessSpec> wrap(const std::vector<RankSlot>& ranks) const override {
    std::vector<ProcessSpec> out;
    for (const auto& r : ranks) {
      const std::string& host = host_of(spec_, r.node);
      ProcessSpec p{ssh_argv(host, remote_argv(r, spec_.cwd, host_env(spec_, host))), env_, ""};
      remember_master(host);
      p.env["DDPBISECT_TRIAL_TOKEN"] = r.process.env.at("DDPBISECT_TRIAL_TOKEN");
      p.env["DDPBISECT_LAUNCH_CLIENT"] = "1";
      out.push_back(std::move(p));
    }
    return out;
  }

  std::string cleanup(const std::string& token, const std::vector<int>& nodes) const override {
    return sweep_hosts(spec_, nodes, token, on_host());
  }
  bool signal_remote(const std::string& token, const std::vector<int>& nodes,
                     int sig) const override {
    sweep_hosts(spec_, nodes, token, on_host(), sig);
    return true;
  }

 private:
  HostCommand on_host() const {
    return [this](const std::string& h, const std::vector<std::string>& argv) {
      return ProcessSpec{ssh_argv(h, argv), env_, ""};
    };
  }

  std::vector<std::string> ssh_argv(const std::string& host,
                                    const std::vector<std::string>& remote) const {
    std::vector<std::string> argv = {"ssh",
                                     "-o",
                                     "BatchMode=yes",
                                     "-o",
                                     "ControlMaster=auto",
                                     "-o",
                                     "ControlPath=/tmp/ddpbisect-ssh-%C",
                                     "-o",
                                     "ControlPersist=120",
                                     "-o",
                                     "ServerAliveInterval=15"};
    argv.insert(argv.end(), spec_.options.begin(), spec_.options.end());
    std::vector<std::string> quoted;
    for (const auto& w : remote) quoted.push_back(shell_quote(w));
    argv.insert(argv.end(), {host, "--", join(quoted, " ")});
    return argv;
  }

  void remember_master(const std::string& host) const {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(close_masters); });
    auto argv = ssh_argv(host, {});
    argv.resize(argv.size() - 2);  // options and host, without "--" and the command
    std::lock_guard<std::mutex> lock(masters_mutex);
    masters.insert(argv);
  }

  LauncherSpec spec_;
  std::map<std::string, std::string> env_;
};

}  // namespace

std::unique_ptr<Launcher> make_ssh_launcher(const LauncherSpec& spec) {
  return std::make_unique<SshLauncher>(spec);
}

}  // namespace ddpbisect
