// The Launcher seam: turns the ranks of one trial into local processes to start. The local
// launcher runs each rank directly; ssh, slurm and prefix launchers (issue #9) wrap them.
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
};

// The launcher the spec asks for; throws std::invalid_argument for kinds this build lacks.
std::unique_ptr<Launcher> make_launcher(const LauncherSpec& spec);

}  // namespace ddpbisect
