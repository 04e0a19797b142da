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

class SshLauncher : public RemoteLauncher {
 public:
  explicit SshLauncher(LauncherSpec spec)
      : RemoteLauncher(std::move(spec)), env_(current_environment()) {}
  std::string name() const override { return "ssh"; }
  // Ranks rendezvous at the first node's host unless the spec names an address.
  std::string master_addr() const override {
    return spec_.master_addr.empty() ? spec_.hosts.front() : spec_.master_addr;
  }

 protected:
  ProcessSpec client(const RankSlot& r) const override {
    const std::string& host = host_of(spec_, r.node);
    remember_master(host);
    return on_host(host, remote_argv(r, spec_.cwd, host_env(spec_, host)));
  }
  ProcessSpec on_host(const std::string& host,
                      const std::vector<std::string>& argv) const override {
    return ProcessSpec{ssh_argv(host, argv), env_, ""};
  }
  bool clients_relay_signals() const override { return true; }

 private:
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

  std::map<std::string, std::string> env_;
};

}  // namespace

std::unique_ptr<Launcher> make_ssh_launcher(const LauncherSpec& spec) {
  return std::make_unique<SshLauncher>(spec);
}

}  // namespace ddpbisect
