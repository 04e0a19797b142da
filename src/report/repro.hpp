// The minimal spec: the original spec with the minimal configuration baked in, valid input for
// `ddpbisect` and `ddpbisect check`.
#pragma once

#include <string>

#include "diagnose/diagnosis.hpp"
#include "spec/spec.hpp"
#include "spec/trial_config.hpp"

namespace ddpbisect {

// `target` is pinned as match.signature, so `check` knows which failure counts.
std::string minimal_spec_yaml(const Spec& spec, const TrialConfig& minimal,
                              const std::string& stage, const Signature& target);

// run.sh: launches the minimal configuration's ranks with torchrun's environment contract and
// needs no ddpbisect (the built-in worker reads config.json, written beside it).
std::string repro_run_sh(const Spec& spec, const TrialConfig& minimal, const Signature& target);

// repro.py, rendered from repro_templates/ddp_repro.py for built-in workloads: a standalone
// PyTorch DDP program with the minimal model, data, settings and fault (needs no ddpbisect).
std::string repro_python(const Spec& spec, const TrialConfig& minimal, const Signature& target);

}  // namespace ddpbisect
