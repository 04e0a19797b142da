// The local launcher: every rank is a child process on this machine. "Nodes" are groups of ranks
// with their own NODE_RANK and log folders, so multi-node behaviour can be exercised locally.
#include "launch/launcher.hpp"

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

 private:
  std::string addr_;
};
}  // namespace

std::unique_ptr<Launcher> make_local_launcher(const LauncherSpec& spec) {
  return std::make_unique<LocalLauncher>(spec.master_addr);
}

}  // namespace ddpbisect
