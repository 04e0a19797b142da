// Stacks of ranks that ddpbisect stops (hang, timeout, the end of the grace period). Python
// ranks are read from outside with `py-spy dump` when it is installed and may attach (ptrace:
// root, or a ptrace_scope that allows it): all threads, no native frames, the rank left running
// until the kill. The dump is written into the rank's stderr in faulthandler's format, so the
// diagnosis reads it as it reads a faulthandler dump. Otherwise a signal asks the rank itself:
// SIGABRT for Python (faulthandler, PYTHONFAULTHANDLER=1; it ends the rank), SIGUSR1 for the
// built-in worker and other programs.
#pragma once

#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace ddpbisect {

// The signal that asks a rank of this workload for its stack.
int stack_signal(const Spec& spec);
// Whether the ranks are Python processes (a python command, or one started by torchrun).
bool python_ranks(const Spec& spec);

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

}  // namespace ddpbisect
