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

// The base of the launchers whose local processes are clients of ranks that run on a host
// (prefix, ssh, slurm): each client carries the trial's token (so the local sweep finds it) and
// DDPBISECT_LAUNCH_CLIENT=1 (so a stack request on a host that shares our /proc spares it);
// cleanup and remote signals run remote_sweep_script on each host through on_host().
class RemoteLauncher : public Launcher {
 public:
  explicit RemoteLauncher(LauncherSpec spec) : spec_(std::move(spec)) {}
  std::vector<ProcessSpec> wrap(const std::vector<RankSlot>& ranks) const final;
  std::string cleanup(const std::string& token, const std::vector<int>& nodes) const override;
  bool signal_remote(const std::string& token, const std::vector<int>& nodes,
                     int sig) const override;

 protected:
  // The local client process that runs this rank on its host.
  virtual ProcessSpec client(const RankSlot& rank) const = 0;
  // `argv` run on `host` (the cleanup script, a stack request).
  virtual ProcessSpec on_host(const std::string& host,
                              const std::vector<std::string>& argv) const = 0;
  // Whether signals to the local clients miss the ranks (ssh, srun: true; a prefix that execs
  // into the rank: false). Without hosts there is nowhere to run the script.
  virtual bool clients_relay_signals() const { return false; }
  bool has_hosts() const { return !spec_.hosts.empty(); }

  LauncherSpec spec_;
};

}  // namespace ddpbisect
