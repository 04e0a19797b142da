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

class SlurmLauncher : public Launcher {
 public:
  explicit SlurmLauncher(LauncherSpec spec) : spec_(std::move(spec)), env_(current_environment()) {
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

  std::vector<ProcessSpec> wrap(const std::vector<RankSlot>& ranks) const override {
    std::vector<ProcessSpec> out;
    for (const auto& r : ranks) {
      std::vector<std::string> argv = {
          "srun",       "--nodes=1",
          "--ntasks=1", "--kill-on-bad-exit=1",
          "--quiet",    "--job-name=ddpbisect-rank" + std::to_string(r.rank)};
      if (!spec_.hosts.empty()) argv.push_back("--nodelist=" + host_of(spec_, r.node));
      if (env_.count("SLURM_JOB_ID")) argv.push_back("--overlap");
      std::string dir = spec_.cwd.empty() ? r.process.cwd : spec_.cwd;
      if (!dir.empty()) argv.push_back("--chdir=" + dir);
      argv.push_back("--export=ALL");  // the step gets srun's environment, set below
      argv.insert(argv.end(), spec_.options.begin(), spec_.options.end());
      argv.insert(argv.end(), r.process.argv.begin(), r.process.argv.end());
      ProcessSpec p{argv, r.process.env, ""};
      if (!spec_.hosts.empty()) {
        auto it = spec_.host_env.find(host_of(spec_, r.node));
        if (it != spec_.host_env.end())
          for (const auto& [k, v] : it->second) p.env[k] = v;
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  std::string cleanup(const std::string& token, const std::vector<int>& nodes) const override {
    if (spec_.hosts.empty()) return "";
    std::set<std::string> hosts;
    for (int n : nodes) hosts.insert(host_of(spec_, n));
    std::string notes;
    for (const auto& host : hosts) {
      std::vector<std::string> argv = {"srun", "--nodes=1", "--ntasks=1", "--quiet",
                                       "--nodelist=" + host};
      if (env_.count("SLURM_JOB_ID")) argv.push_back("--overlap");
      argv.insert(argv.end(), {"sh", "-c", remote_sweep_script(token)});
      std::string out;
      if (int rc = run_capture({argv, env_, ""}, 30, out); rc != 0)
        notes += "cleanup on " + host + " exited " + std::to_string(rc) + ": " + out + "\n";
    }
    return notes;
  }

 private:
  LauncherSpec spec_;
  std::map<std::string, std::string> env_;
};

}  // namespace

std::unique_ptr<Launcher> make_slurm_launcher(const LauncherSpec& spec) {
  return std::make_unique<SlurmLauncher>(spec);
}

}  // namespace ddpbisect
