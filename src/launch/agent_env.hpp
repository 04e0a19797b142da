// The in-process agent's wiring (docs/agent.md): where python/agent is, and the variables a rank
// of a command workload gets when the agent is on.
#pragma once

#include <map>
#include <string>

#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

// The signal the agent dumps stacks on: SIGUSR2 (SIGUSR1 is taken by Lightning's SLURM requeue).
constexpr int kAgentStackSignal = 12;

// The folder holding the agent's sitecustomize.py: $DDPBISECT_AGENT_DIR, else python/agent beside
// the running binary (the build copies it there), else the source tree's. "" when none exists.
std::string agent_dir();

// Adds the agent's variables to a rank's environment when spec.command->agent is on:
// PYTHONPATH with the agent first and the helper module (ddpbisect.py) next, the user's entries
// after them, DDPBISECT_AGENT=1,
// DDPBISECT_STACK_SIGNAL, DDPBISECT_SAMPLES_AUTO (and DDPBISECT_SAMPLES left out while the samples
// are not known yet: all of them), DDPBISECT_MAX_STEPS from params.steps under `steps: auto`.
void add_agent_env(const Spec& spec, const TrialConfig& config,
                   std::map<std::string, std::string>& env);

}  // namespace ddpbisect
