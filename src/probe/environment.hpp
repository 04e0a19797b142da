// The environment probe: the fields of torch.utils.collect_env that matter for a bug report (asked
// of the workload's Python and nvidia-smi), and the NCCL_*, TORCH_*, MASTER_*, GLOO_*, CUDA_*
// variables (secrets redacted). The CLI runs it beside a reduction; the reports render its JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spec/spec.hpp"

namespace ddpbisect {

// The Python interpreter the workload runs under: the command's own interpreter when its argv[0]
// is one, else /usr/bin/python3 (Debian's, with torch), else python3 on PATH.
std::string workload_python(const Spec& spec);

// Collects the environment; the Python side (torch, CUDA, cuDNN, NCCL, GPUs) is asked of
// `python` with a time limit, and what it cannot tell is null.
nlohmann::json collect_environment(const std::string& python);

}  // namespace ddpbisect
