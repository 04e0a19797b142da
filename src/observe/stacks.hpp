// Stacks of ranks that ddpbisect stops (hang, timeout, the end of the grace period). Python
// ranks are read from outside with `py-spy dump` when it is installed and may attach (ptrace:
// root, or a ptrace_scope that allows it): all threads, no native frames, the rank left running
// until the kill. The dump is written into the rank's stderr in faulthandler's format, so the
// diagnosis reads it as it reads a faulthandler dump. Otherwise a signal asks the rank itself:
// each process of the rank is asked in its own way (stack_signal_for): the agent's signal, SIGABRT
// for Python (faulthandler; it ends the process), SIGUSR1 for the built-in worker.
#pragma once

#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spec/spec.hpp"

namespace ddpbisect {

// The signal that asks a rank of this workload for its stack.
int stack_signal(const Spec& spec);
// Whether the ranks are Python processes (a python command, or one started by torchrun).
bool python_ranks(const Spec& spec);

// What a process of a rank is, as far as a stack request cares: its program (/proc/PID/exe, else
// argv[0]), its argv and the signals it catches (SigCgt of /proc/PID/status, bit N-1 = signal N).
struct ProcessFacts {
  pid_t pid = 0;
  std::string exe;
  std::vector<std::string> argv;
  uint64_t caught = 0;
};
ProcessFacts process_facts(pid_t pid);  // pid 0 when the process is gone

// The in-process agent's stack signal, as the rank's environment sets it (DDPBISECT_STACK_SIGNAL,
// docs/agent.md), default SIGUSR2; an unusable value falls back to the default.
int agent_stack_signal(const std::map<std::string, std::string>& env);

// The signal that asks this process for its stack, or 0 to leave it alone. Pure.
//   catches `agent_signal`            -> agent_signal (the agent's dump; the process goes on)
//   Python, under no other Python     -> SIGABRT (faulthandler, PYTHONFAULTHANDLER=1; fatal)
//   ddpbisect-worker                  -> SIGUSR1 (its own dump)
//   anything else                     -> 0: wrappers (sh -c, bash, env, `conda run`, a Python
//       child forked by the rank's Python, e.g. a DataLoader worker) and other native programs,
//       which a signal would only kill.
int stack_signal_for(const ProcessFacts& p, bool under_python, int agent_signal);

// A rank's process and its descendants, parents first, each with the signal that asks it for its
// stack (0 entries left out).
std::vector<std::pair<pid_t, int>> stack_requests(pid_t root, int agent_signal);

// py-spy: $DDPBISECT_PY_SPY ("" or "0" turns it off), else `py-spy` on `path` (the ranks' PATH,
// where their python is found); "" when there is none.
std::string find_py_spy(const std::string& path);

// `py-spy dump --json` of each pid, in parallel, each within `timeout_s`: the dump in
// faulthandler's format, or nullopt where py-spy could not read the process.
std::vector<std::optional<std::string>> py_spy_dumps(const std::string& py_spy,
                                                     const std::vector<pid_t>& pids,
                                                     double timeout_s = 10);

// py-spy's JSON (a list of threads, frames innermost first) in faulthandler's format: the main
// thread as "Current thread 0x…", then the others, each "  File "f", line N in name".
std::string render_py_spy(const nlohmann::json& threads);

// The variables that turn on the Flight Recorder in a hang debug rerun and keep its dumps in
// `dir`: ring buffer sizes (TORCH_FR_BUFFER_SIZE, NCCL's older name), NCCL's own dump on a
// timeout (TORCH_FR_DUMP_TEMP_FILE=<dir>/rank), and DDPBISECT_FR_DUMP=<dir>, where the
// in-process agent writes <dir>/rank<R> (torch's _dump_fr_trace) when asked for its stack.
std::map<std::string, std::string> flight_recorder_env(const std::string& dir);

// A line of a stack dump (faulthandler's, py-spy's, our worker's, the agent's trace): the answer
// to a stack request, never progress, however late it comes.
bool is_dump_line(std::string_view line);
// Whether a dump holds a frame (faulthandler's, py-spy's and our worker's all print `File "…"`).
bool has_frames(const std::string& stack);
// What a rank printed on stderr (a capture with its `.times` file) after the stack request: its
// dump.
std::string read_stack(const std::string& stderr_path, double requested_at);

}  // namespace ddpbisect
