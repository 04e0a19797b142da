// The local launcher: every rank is a child process on this machine. "Nodes" are groups of ranks
// with their own NODE_RANK and log folders, so multi-node behaviour can be exercised locally.
#include <mutex>

#include "common/notice.hpp"
#include "launch/cgroup.hpp"
#include "launch/launcher.hpp"
#include "launch/process.hpp"
#include "launch/rank_plan.hpp"
#include "launch/warm_server.hpp"

namespace ddpbisect {

namespace {
class LocalLauncher : public Launcher {
 public:
  explicit LocalLauncher(std::string addr) : addr_(addr.empty() ? "127.0.0.1" : std::move(addr)) {}
  std::string name() const override { return "local"; }
  std::string master_addr() const override { return addr_; }
  std::vector<ProcessSpec> wrap(const std::vector<RankSlot>& ranks) const override {
    std::vector<ProcessSpec> out;
    for (const auto& r : ranks) out.push_back(r.process);
    return out;
  }
  std::string warm_socket(const Spec& spec, const std::string& log) const override {
    if (!spec.command || spec.command->preload.empty()) return "";
    std::lock_guard<std::mutex> lock(warm_mutex_);
    if (!warm_ && !warm_tried_) {
      warm_tried_ = true;
      ProcessSpec server = warm_server_process(spec);
      std::string why;
      const bool asked = !spec.command->preload_default;
      if (!warm_startable(server.argv))
        why = "the command is not `python SCRIPT` or `python -m MODULE`";
      else if (!asked && !TrialCgroup::create("ddpbisect-probe-" + random_token(), {}).contains())
        // Without a trial cgroup, what a rank leaves behind is found by the trial token in
        // /proc/PID/environ, which a forked rank's fork-only children do not show: by default,
        // such a host starts cold.
        why = "no cgroup holds the ranks here (not root, nothing delegated)";
      else
        warm_ = WarmServer::start(server, spec.command->preload, log, why);
      // Warm starts by default: a command they do not fit (torchrun, a binary) starts cold
      // without a word; a fork server that failed is said once, with how to turn it off.
      if (!warm_ && asked)
        notice("ddpbisect: warning: workload.preload: ranks start cold: " + why);
      else if (!warm_ && warm_startable(server.argv))
        notice("ddpbisect: note: warm starts are off for this reduction: " + why +
               " (`workload.preload: none` says so without trying)");
    }
    return warm_ ? warm_->socket() : "";
  }

 private:
  std::string addr_;
  mutable std::mutex warm_mutex_;
  mutable std::unique_ptr<WarmServer> warm_;
  mutable bool warm_tried_ = false;
};
}  // namespace

std::unique_ptr<Launcher> make_local_launcher(const LauncherSpec& spec) {
  return std::make_unique<LocalLauncher>(spec.master_addr);
}

}  // namespace ddpbisect
