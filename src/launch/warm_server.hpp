// Warm starts (`workload.preload`, docs/agent.md "Warm starts"): one fork server per reduction on
// the driver's host (python/agent/ddpbisect_agent/warm.py) imports the listed modules once; each
// rank of a `python SCRIPT` / `python -m MODULE` command is then a `ddpbisect-warm` stub (src/warm)
// that has the server fork the rank for it, inside the trial's cgroup and isolated view. Whatever
// the server cannot do (another interpreter, a wrapper, a torchrun command, a remote host) starts
// cold, as without preload.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "launch/process.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

class WarmServer {
 public:
  // Starts the server from `process` (its argv is the Python to use: the command's argv[0]);
  // nullptr, with `why` set, when it cannot start. Its output goes to `log`.
  static std::unique_ptr<WarmServer> start(const ProcessSpec& process,
                                           const std::vector<std::string>& modules,
                                           const std::string& log, std::string& why);
  // The server is started, killed and reaped by a keeper thread that lives as long as this
  // object: a child gets PR_SET_PDEATHSIG from the thread that forked it, and a trial's thread
  // ends with its trial.
  ~WarmServer();  // kills and reaps the server (its ranks go with their stubs)
  WarmServer(const WarmServer&) = delete;
  WarmServer& operator=(const WarmServer&) = delete;

  const std::string& socket() const { return socket_; }

 private:
  WarmServer() = default;
  void keep(const ProcessSpec& spec);
  std::string socket_;
  pid_t pid_ = -1;
  std::string start_error_;
  bool started_ = false, stopping_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread keeper_;
};

// True when a rank's argv can be forked warm: `python... SCRIPT` or `python... -m MODULE`.
bool warm_startable(const std::vector<std::string>& argv);

// The stub's argv around a rank's command: ddpbisect-warm --socket NAME --child 0… -- ARGV.
std::vector<std::string> warm_argv(const std::string& socket, const std::vector<std::string>& argv);

// Path of ddpbisect-warm: $DDPBISECT_WARM, else beside the running binary.
std::string warm_stub_path();

// The forked rank a stub stands for, from the digits it wrote over --child in its command line
// (/proc/PID/cmdline); -1 when `pid` is not a stub or has no rank yet.
pid_t warm_rank_pid(pid_t stub);

}  // namespace ddpbisect
