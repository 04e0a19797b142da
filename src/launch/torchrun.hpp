// A command workload that is the user's own launcher (the forms of launch_forms.def: `torchrun
// ... train.py`, `python -m torch.distributed.run ...`, the launch-era `python -m
// torch.distributed.launch [--use-env] ...`, which is torchrun's parser and passes each rank
// --local-rank=N, and `accelerate launch ...`, which runs torchrun in-process) runs as users run
// it: one torchrun agent per node,
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

// The launch forms of launch/launch_forms.def.
enum class LaunchForm {
#define DDPBISECT_LAUNCH_FORM(name, matches, replaced, ranks) name,
#include "launch/launch_forms.def"
};
const char* launch_form_name(LaunchForm form);

struct TorchrunCommand {
  LaunchForm form = LaunchForm::torchrun;
  std::vector<std::string> launcher;  // ["torchrun"] or ["python3", "-m", "torch.distributed.run"]
                                      // (or torch.distributed.launch, with the python's flags;
                                      // or ["accelerate", "launch"])
  std::vector<std::string> options;   // the user's options, less those ddpbisect sets
  std::vector<std::string> program;   // the training script (or -m module) and its arguments
  std::vector<std::string> dropped;   // the user's options ddpbisect replaced, for the record
};

// The launcher invocation in `argv` (any form of launch_forms.def), or nullopt when argv is a
// plain program.
std::optional<TorchrunCommand> parse_torchrun(const std::vector<std::string>& argv);

struct AgentPlace {
  int nodes = 1, procs_per_node = 1;
  std::string addr, port;  // MASTER_ADDR, MASTER_PORT: the rendezvous
  std::string run_id;
  std::string log_dir;    // this node's --log-dir
  std::string node_rank;  // this node's index (a shell word in a repro script)
  // A script's static rendezvous: --node-rank, --master-addr/port, no log folder (a trial's is
  // c10d, so that an agent's node is the rendezvous's choice).
  bool static_rendezvous = false;
};

// The argv of one node's agent.
std::vector<std::string> agent_argv(const TorchrunCommand& cmd, const AgentPlace& place);

// deepspeed's runner (`deepspeed …`, `ds …`, `python -m deepspeed.launcher.runner …`): not an
// agent form. ddpbisect starts the ranks itself as deepspeed's launch.py does, each a plain
// process; nullopt for any other command (parse_torchrun is nullopt for this one).
std::optional<TorchrunCommand> parse_deepspeed(const std::vector<std::string>& argv);
// One rank's command as launch.py builds it: `python -u [-m] SCRIPT --local_rank={local_rank}
// ARGS…` (the placeholder filled per rank; --no_python, --module and --no_local_rank honoured).
std::vector<std::string> deepspeed_rank_argv(const TorchrunCommand& cmd, const std::string& python);
// The interpreter launch.py would use: the runner's own (`python -m …`'s, or the `deepspeed`
// script's #! line, found on `path`); "python3" when it cannot be read.
std::string deepspeed_python(const TorchrunCommand& cmd, const std::string& path);

// What a user should know before trusting a trial of this launch command: which of its options
// the stages and the trial's rendezvous replace, and each one whose effect a trial does not
// reproduce (deepspeed's core binding and GPU selection, restarts). Empty for a plain program.
std::vector<std::string> launch_form_notes(const std::vector<std::string>& argv);

// A form that does not start torchrun for one rank (accelerate: `--multi_gpu` wants 2 or more
// processes) runs that rank as a plain process of this argv; nullopt: the agents' argv as always.
std::optional<std::vector<std::string>> single_rank_argv(const TorchrunCommand& cmd);

// The line prefix the agents are asked for, and its parse: "[ddpbisect rank=R local=L]:".
extern const char* const kAgentPrefixTemplate;  // for TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE
struct PrefixedLine {
  int rank = -1;        // -1 when the prefix does not name it (torchrun's own [defaultL]: form)
  int local_rank = -1;  // -1: not a rank's line (the agent's own)
  std::string_view text;
};
PrefixedLine split_agent_line(std::string_view line);

}  // namespace ddpbisect
