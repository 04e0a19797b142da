// The minimal spec: the original spec with the minimal configuration baked in, valid input for
// `ddpbisect` and `ddpbisect check`.
#pragma once

#include <string>

#include "diagnose/diagnosis.hpp"
#include "report/report.hpp"
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

// The repro/ files of a report (report.cpp's table): repro.yaml, config.json (what ranks read),
// run.sh and repro.py, for the minimal configuration and the target.
std::string render_repro_yaml(const ReportInputs& in);
// Command workloads: copies what run.sh needs of ours beside it, repro/python/ (the helper module
// ddpbisect.py and the agent). Throws OutputError.
void write_repro_support(const ReportInputs& in);
std::string render_rank_config(const ReportInputs& in);
std::string render_run_sh(const ReportInputs& in);
std::string render_repro_py(const ReportInputs& in);

}  // namespace ddpbisect
