// What the launchers that run ranks elsewhere share: the command a rank runs on its host, with
// the variables ddpbisect set passed explicitly (a remote host has its own environment), and the
// sweep that kills a trial's leftovers there.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "launch/launcher.hpp"

namespace ddpbisect {

// ["env", "-C", cwd, "NAME=VALUE"..., argv...]: the rank's variables that the driver's own
// environment does not already hold (the torchrun contract, DDPBISECT_*, the spec's env), then
// `host_env`; run on the host, it needs only coreutils' env. `cwd` empty: the rank's own.
std::vector<std::string> remote_argv(const RankSlot& rank, const std::string& cwd,
                                     const std::map<std::string, std::string>& host_env);

// A POSIX sh script that sends `sig` (default SIGKILL) to every process whose environment holds
// the token, except the launcher's own clients (DDPBISECT_LAUNCH_CLIENT=1).
std::string remote_sweep_script(const std::string& token, int sig = 9);

// Splits a prefix template on spaces and substitutes {host} in every word (no shell).
std::vector<std::string> expand_prefix(const std::string& tmpl, const std::string& host);

// The host's variables from launcher.env (empty when it has none).
const std::map<std::string, std::string>& host_env(const LauncherSpec& spec,
                                                   const std::string& host);

// Runs remote_sweep_script (with `sig`) once on each host that ran one of `nodes`, through
// `on_host` (the launcher's way of running an argv there), and returns a note for each that
// failed.
using HostCommand =
    std::function<ProcessSpec(const std::string& host, const std::vector<std::string>& argv)>;
std::string sweep_hosts(const LauncherSpec& spec, const std::vector<int>& nodes,
                        const std::string& token, const HostCommand& on_host, int sig = 9);

// The host of node `node` (hosts[node]); throws std::out_of_range with a clear message.
const std::string& host_of(const LauncherSpec& spec, int node);

}  // namespace ddpbisect
