// A command workload that is the user's own torchrun invocation (`torchrun ... train.py`,
// `python -m torch.distributed.run ...`, or the launch-era `python -m torch.distributed.launch
// [--use-env] ...`, which is torchrun's parser and passes each rank --local-rank=N) runs as users
// run it: one torchrun agent per node,
// started through the launcher like a rank, each told the stage's topology (--nnodes,
// --nproc-per-node), a c10d rendezvous at the trial's MASTER_ADDR:MASTER_PORT and a --log-dir in
// the trial folder; the agents start the ranks. Their output comes back tee'd with a prefix that
// names each line's global and local rank (TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE), so the
// observer files it per rank as with its own launcher.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ddpbisect {

struct TorchrunCommand {
  std::vector<std::string> launcher;  // ["torchrun"] or ["python3", "-m", "torch.distributed.run"]
                                      // (or torch.distributed.launch, with the python's flags)
  std::vector<std::string> options;   // the user's options, less those ddpbisect sets
  std::vector<std::string> program;   // the training script (or -m module) and its arguments
  std::vector<std::string> dropped;   // the user's options ddpbisect replaced, for the record
};

// The torchrun invocation in `argv`, or nullopt when argv does not start torchrun.
std::optional<TorchrunCommand> parse_torchrun(const std::vector<std::string>& argv);

struct AgentPlace {
  int nodes = 1, procs_per_node = 1;
  std::string endpoint;  // MASTER_ADDR:MASTER_PORT, the c10d rendezvous
  std::string run_id;
  std::string log_dir;  // this node's --log-dir
};

// The argv of one node's agent.
std::vector<std::string> agent_argv(const TorchrunCommand& cmd, const AgentPlace& place);

// The line prefix the agents are asked for, and its parse: "[ddpbisect rank=R local=L]:".
extern const char* const kAgentPrefixTemplate;  // for TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE
struct PrefixedLine {
  int rank = -1;        // -1 when the prefix does not name it (torchrun's own [defaultL]: form)
  int local_rank = -1;  // -1: not a rank's line (the agent's own)
  std::string_view text;
};
PrefixedLine split_agent_line(std::string_view line);

}  // namespace ddpbisect
