// The slurm launcher: each rank is one job step, `srun --nodes=1 --ntasks=1` placed on its
// node's host, inside the current allocation (SLURM_JOB_ID set: the steps share it, so
// independent trials run side by side) or, outside one, each step requesting its own. The
// environment contract is set per rank (--export), so ranks need no SLURM_PROCID mapping; srun
// forwards SIGTERM/SIGINT for early stops and hang kills, --kill-on-bad-exit ends a step with a
// failed task, and leftovers are swept on the node like on the other launchers. Hosts: the
// spec's `launcher.hosts`, else the allocation's nodes, else (no allocation) Slurm picks.
#include <set>

#include "common/text.hpp"
#include "launch/process.hpp"
#include "launch/remote.hpp"

namespace ddpbisect {

namespace {

// `scontrol show hostnames` of the allocation, or an empty list outside one.
std::vector<std::string> allocation_hosts(const std::map<std::string, std::string>& env) {
  auto it = env.find("SLURM_JOB_NODELIST");
  if (it == env.end() || it->second.empty()) return {};
  std::string out;
  if (run_capture({{"scontrol", "show", "hostnames", it->second}, env, ""}, 20, out) != 0)
    return {};
  std::vector<std::string> hosts;
  for (const auto& line : split(out, '\n'))
    if (!trim(line).empty()) hosts.emplace_back(trim(line));
  return hosts;
}

class SlurmLauncher : public RemoteLauncher {
 public:
  explicit SlurmLauncher(LauncherSpec spec)
      : RemoteLauncher(std::move(spec)), env_(current_environment()) {
    if (spec_.hosts.empty()) spec_.hosts = allocation_hosts(env_);
  }
  std::string name() const override { return "slurm"; }
  // The step's first node, where rank 0 runs: its NodeAddr as Slurm knows it.
  std::string master_addr() const override {
    if (!spec_.master_addr.empty()) return spec_.master_addr;
    if (spec_.hosts.empty()) return "127.0.0.1";
    std::string out;
    if (run_capture({{"scontrol", "-o", "show", "node", spec_.hosts.front()}, env_, ""}, 20, out) ==
        0)
      for (const auto& word : split(out, ' '))
        if (starts_with(word, "NodeAddr=") && word.size() > 9) return word.substr(9);
    return spec_.hosts.front();
  }

 protected:
  ProcessSpec client(const RankSlot& r) const override {
    std::vector<std::string> argv = {
        "srun",       "--nodes=1",
        "--ntasks=1", "--kill-on-bad-exit=1",
        "--quiet",    "--job-name=ddpbisect-rank" + std::to_string(r.rank)};
    if (has_hosts()) argv.push_back("--nodelist=" + host_of(spec_, r.node));
    if (env_.count("SLURM_JOB_ID")) argv.push_back("--overlap");
    std::string dir = spec_.cwd.empty() ? r.process.cwd : spec_.cwd;
    if (!dir.empty()) argv.push_back("--chdir=" + dir);
    // The step gets srun's environment, less the mark of a launch client.
    argv.push_back("--export=ALL,DDPBISECT_LAUNCH_CLIENT=");
    argv.insert(argv.end(), spec_.options.begin(), spec_.options.end());
    argv.insert(argv.end(), r.process.argv.begin(), r.process.argv.end());
    ProcessSpec p{argv, r.process.env, ""};
    if (has_hosts())
      for (const auto& [k, v] : host_env(spec_, host_of(spec_, r.node))) p.env[k] = v;
    return p;
  }
  // A one-task step on `host` (overlapping the allocation's other steps).
  ProcessSpec on_host(const std::string& host,
                      const std::vector<std::string>& command) const override {
    std::vector<std::string> argv = {"srun", "--nodes=1", "--ntasks=1", "--quiet",
                                     "--nodelist=" + host};
    if (env_.count("SLURM_JOB_ID")) argv.push_back("--overlap");
    argv.insert(argv.end(), command.begin(), command.end());
    return ProcessSpec{argv, env_, ""};
  }
  bool clients_relay_signals() const override { return true; }

 private:
  std::map<std::string, std::string> env_;
};

}  // namespace

std::unique_ptr<Launcher> make_slurm_launcher(const LauncherSpec& spec) {
  return std::make_unique<SlurmLauncher>(spec);
}

}  // namespace ddpbisect
