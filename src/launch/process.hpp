// Starting and ending rank processes: argv exec'd directly (never a shell), each rank in its own
// process group, killed with the driver (PR_SET_PDEATHSIG), and a per-trial token in every
// environment so that even a grandchild that escaped with setsid can be found and reaped.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ddpbisect {

struct ProcessSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // the complete environment
  std::string cwd;
  // cgroup.procs files the child joins before it execs (a trial's cgroups; launch/cgroup.hpp).
  std::vector<std::string> join_cgroups = {};
};

struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // read ends of the child's stdout and stderr pipes (non-blocking)
  int err_fd = -1;
};

struct StartResult {
  Child child;
  std::string error;  // why it could not start; child.pid is then -1
  bool ok() const { return child.pid > 0; }
};

// Forks and execs `spec`. On failure to exec (missing program, permission), the result says
// why and no child is left behind.
StartResult start_process(const ProcessSpec& spec);

// Runs a short helper command to completion and returns its exit status (128+signal when a
// signal ended it, -1 when it could not start or ran past `timeout_s` and was killed); its
// stdout and stderr together, at most `cap` bytes, go to `output`. When `stop` is given and
// turns true, the helper is killed as at a timeout.
int run_capture(const ProcessSpec& spec, double timeout_s, std::string& output,
                size_t cap = 1 << 20, const std::function<bool()>& stop = {});

// 16 random hex digits (thread-safe): trial tokens.
std::string random_token();

// This process's environment as a map.
std::map<std::string, std::string> current_environment();

// SIGKILLs the process group of `pid` (the rank and every descendant that stayed in it).
void kill_group(pid_t pid, int sig = 9);

// Kills every process whose environment carries DDPBISECT_TRIAL_TOKEN=token, repeatedly until
// none is left (or `rounds` scans), and reaps those that are our children. Returns how many it
// killed.
int sweep_token(const std::string& token, int rounds = 20);

// Processes (pids) whose environment carries the token; read from /proc, not from bookkeeping.
std::vector<pid_t> find_token(const std::string& token);
// Whether a process group still has a member that is not a zombie (a SIGKILLed process is still
// there until the kernel has run it to its end, which takes a while on a loaded machine).
bool group_has_live_member(pid_t pgid);

// Makes the driver the reaper of orphaned descendants (PR_SET_CHILD_SUBREAPER), so that the token
// sweep can reap a rank's grandchildren. Called once by main, before any trial.
void become_child_subreaper();

// Reaps zombie children nobody waits for: a rank's descendants that were reparented to the
// driver (its subreaper) and then killed by the trial's end. Children started by
// start_process are left to whoever started them. Returns how many it reaped.
int reap_orphans();
// Marks `pid` as reaped by its owner: start_process's children count as owned until then.
void disown_child(pid_t pid);

// Parent pid and state letter (R, S, Z, ...) of a process, from /proc/PID/stat; false when it is
// gone.
bool proc_state(pid_t pid, pid_t& ppid, char& state);
// The live children of `parent`, from /proc.
std::vector<pid_t> child_pids(pid_t parent);
// A process's environment, from /proc/PID/environ (empty when unreadable or gone).
std::map<std::string, std::string> process_environment(pid_t pid);

// CPU time (user+system) of a process in seconds, or -1 when it is gone.
double process_cpu_seconds(pid_t pid);

}  // namespace ddpbisect
