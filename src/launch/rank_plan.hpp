// What each rank of a trial runs: its argv (placeholders substituted), its environment (torchrun's
// contract, DDPBISECT_* variables, Python defaults for commands) and its cwd.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launch/launcher.hpp"
#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

struct TrialPlace {
  std::string dir;          // the trial folder (DDPBISECT_TRIAL_DIR)
  std::string config_path;  // DDPBISECT_CONFIG
  std::string master_addr;
  int master_port = 0;
  std::string token;                             // DDPBISECT_TRIAL_TOKEN
  std::map<std::string, std::string> extra_env;  // e.g. TORCH_DISTRIBUTED_DEBUG for a rerun
  std::string warm_socket;  // the fork server ranks start from (launch/warm_server.hpp), or ""
};

std::vector<RankSlot> plan_ranks(const Spec& spec, const TrialConfig& config,
                                 const TrialPlace& place);

// The warm-start server's process (launch/warm_server.hpp): the command's Python, the
// environment every trial's ranks share (no trial's or rank's identity), the command's cwd; its
// argv is the command's (WarmServer::start replaces all but argv[0]).
ProcessSpec warm_server_process(const Spec& spec);

// The command each rank (or agent) starts, placeholders unfilled: the workload's argv, except
// that a deepspeed form (launch/torchrun.hpp) is its ranks' own command, as its launch.py runs it.
std::vector<std::string> command_argv(const CommandWorkload& c);

// DDPBISECT_PARAM_<NAME>: the variable that carries param NAME to a rank.
std::string param_variable(const std::string& name);

// The values of {samples}, {components}, {features} and {NAME} for a trial.
std::map<std::string, std::string> placeholder_values(const Spec& spec, const TrialConfig& config);

// Path of ddpbisect-worker: $DDPBISECT_WORKER, else beside the running ddpbisect binary.
std::string worker_path();
// A program shipped beside ddpbisect: $ENV_VAR when set, else NAME in the running binary's folder.
std::string companion_path(const char* env_var, const std::string& name);

}  // namespace ddpbisect
