// Where concurrent trials run: the room a stage leaves free. On CPUs, cores (each rank takes
// `cores_per_rank`); on a multi-GPU node, GPUs (a candidate needing g of them gets g of its own,
// passed to its ranks as CUDA_VISIBLE_DEVICES); inside a Slurm allocation, nodes (a candidate on
// n nodes gets n free ones as its launcher's hosts). The assignment is pure and unit-tested;
// detect_resources reads the machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

struct Resources {
  int cores = 1;
  int cores_per_rank = 1;
  std::vector<std::string> gpus;   // CUDA_VISIBLE_DEVICES ids to share out; empty: none
  std::vector<std::string> hosts;  // Slurm nodes to share out; empty: the spec's own hosts
};

// Cores from this process's CPU affinity; GPUs (for a cuda stage on the local launcher) from
// CUDA_VISIBLE_DEVICES or /proc/driver/nvidia/gpus; hosts (for the slurm launcher inside an
// allocation) from launcher.hosts or the allocation's node list. Cores per rank: the workload's
// OMP_NUM_THREADS, else 1.
Resources detect_resources(const Spec& spec);

struct Slot {
  int cores = 0;
  std::vector<std::string> gpus;   // this trial's CUDA_VISIBLE_DEVICES; empty: not set
  std::vector<std::string> hosts;  // this trial's hosts, node 0 first; empty: the spec's
};

class SlotPool {
 public:
  // At most `jobs` trials at once; jobs 0 ("auto"): as many as the cores hold. GPUs and hosts
  // are never shared between trials, whatever `jobs` says.
  SlotPool(Resources resources, int jobs);
  // Room for `config` now, or nullopt. A trial that needs more than there is gets everything
  // once nothing else runs, so a large candidate is never starved.
  std::optional<Slot> acquire(const TrialConfig& config);
  void release(const Slot& slot);
  int running() const { return running_; }
  // How many trials like `config` can run at once (1 at least).
  int width(const TrialConfig& config) const;

 private:
  int cores_needed(const TrialConfig& config) const;
  Resources all_;
  int jobs_;
  int running_ = 0;
  int free_cores_;
  std::vector<std::string> free_gpus_, free_hosts_;
};

}  // namespace ddpbisect
