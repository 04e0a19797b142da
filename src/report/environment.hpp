// The environment a failure was found in: the fields of torch.utils.collect_env that matter for a
// bug report, and the NCCL_*, TORCH_*, MASTER_*, GLOO_*, CUDA_* variables (secrets redacted).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spec/spec.hpp"

namespace ddpbisect {

// Redacts a variable's value when its name says it is a secret (TOKEN, SECRET, KEY, PASSWORD,
// CREDENTIAL), and credential-looking parts of any value (key=..., user:pass@ in URLs).
std::string redact_value(const std::string& name, const std::string& value);

// The Python interpreter the workload runs under: the command's own interpreter when its argv[0]
// is one, else /usr/bin/python3 (Debian's, with torch), else python3 on PATH.
std::string workload_python(const Spec& spec);

// Collects the environment; the Python side (torch, CUDA, cuDNN, NCCL, GPUs) is asked of
// `python` with a time limit, and what it cannot tell is null.
nlohmann::json collect_environment(const std::string& python);

}  // namespace ddpbisect
