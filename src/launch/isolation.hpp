// Trial isolation (issue #16): every rank of a command workload runs under ddpbisect-isolate
// (src/isolate/), which gives the trial its own copy-on-write view of the working folder and of
// `workload.state` (overlayfs in a mount namespace, one per trial per host; a per-trial copy where
// that is impossible). What a trial writes stays in <trial>/isolation/<host>/upper*.
#pragma once

#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace ddpbisect {

// Path of ddpbisect-isolate: $DDPBISECT_ISOLATE, else beside the running binary.
std::string isolate_path();

// argv wrapped so the rank runs in the trial's view: ddpbisect-isolate --dir <trial>/isolation
// --cwd CWD --keep <trial> [--state P]... -- argv. Unchanged (one warning per process) when the
// helper is missing; unchanged for built-in workloads (the worker writes only its trial folder).
std::vector<std::string> isolate_argv(const Spec& spec, const std::string& trial_dir,
                                      const std::vector<std::string>& argv);

// The files a trial wrote into its view (relative to the folder they belong to: the working
// folder, or a state path), from the overlay's upper folders; deletions end in " (deleted)".
// Empty when the trial ran without a view.
std::vector<std::string> trial_written_files(const Spec& spec, const std::string& trial_dir,
                                             size_t cap = 200);

}  // namespace ddpbisect
