// The Launcher seam: turns the ranks of one trial into local processes to start. The local
// launcher runs each rank directly; the prefix, ssh and slurm launchers wrap each rank's command
// so that it runs on its node's host (remote.hpp builds what they share).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launch/process.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

struct RankSlot {
  int rank = 0;
  int local_rank = 0;
  int node = 0;
  // 0: the process is the rank. N: it is a torchrun agent that starts the node's N ranks
  // (rank, local_rank: the first of them, as planned; the rendezvous decides the real ones).
  int agent_ranks = 0;
  ProcessSpec process;  // the rank's own command, environment and cwd
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;
  // The address ranks rendezvous at (MASTER_ADDR).
  virtual std::string master_addr() const = 0;
  // The processes to start on this machine for these ranks (one per rank, or a wrapper each).
  virtual std::vector<ProcessSpec> wrap(const std::vector<RankSlot>& ranks) const = 0;
  // Kills what is left of a trial on the hosts (every process whose environment carries
  // DDPBISECT_TRIAL_TOKEN=token), after the local sweep. Returns a note for the log, or "".
  virtual std::string cleanup(const std::string& token, const std::vector<int>& nodes) const {
    (void)token;
    (void)nodes;
    return "";
  }
  // Warm starts (`workload.preload`, launch/warm_server.hpp): the fork server's socket name for
  // this spec's ranks, the server started on first use (its output to `log`); "" when ranks
  // start cold (a launcher whose ranks run elsewhere, or no preload).
  // This default (ranks on other hosts, no server there) warns once when preload was asked for.
  virtual std::string warm_socket(const Spec& spec, const std::string& log) const;
  // Sends `sig` to the ranks on these nodes when the local processes are only their clients
  // (ssh, srun), so that stack requests reach them; false when local signals already do.
  virtual bool signal_remote(const std::string& token, const std::vector<int>& nodes,
                             int sig) const {
    (void)token;
    (void)nodes;
    (void)sig;
    return false;
  }
};

// The launcher the spec asks for (launcher.cpp: the factory over spec/launchers.def).
std::unique_ptr<Launcher> make_launcher(const LauncherSpec& spec);

// One per row of spec/launchers.def, each defined in NAME_launcher.cpp.
#define DDPBISECT_LAUNCHER(name, required, takes, runs_here, help) \
  std::unique_ptr<Launcher> make_##name##_launcher(const LauncherSpec& spec);
#include "spec/launchers.def"

}  // namespace ddpbisect
