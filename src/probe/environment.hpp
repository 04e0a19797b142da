// The environment probe: torch.utils.collect_env's report and the fields of it that matter for a
// bug report (asked of the workload's Python and nvidia-smi), and the NCCL_*, TORCH_*, MASTER_*,
// GLOO_*, CUDA_* variables (secrets redacted). The CLI runs it beside a reduction; the reports
// render its JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spec/spec.hpp"

namespace ddpbisect {

// The Python interpreter the workload runs under: the command's argv[0] when it is one, else the
// interpreter its "#!" line names (torchrun, accelerate, a script), else python3 on PATH (the
// PyTorch users run; the built-in worker's libtorch comes from it), else /usr/bin/python3.
std::string workload_python(const Spec& spec);

// Collects the environment; the Python side (torch, CUDA, cuDNN, NCCL, GPUs) is asked of
// `python` with a time limit, and what it cannot tell is null. `collect_env` holds the text
// `python -m torch.utils.collect_env` prints (null, with `collect_env_error`, when it cannot).
nlohmann::json collect_environment(const std::string& python);

}  // namespace ddpbisect
