// Reads a spec from YAML, checks every key, and reports all errors at once with file:line:column.
#pragma once

#include <optional>
#include <string>

#include "common/diagnostic.hpp"
#include "spec/spec.hpp"

namespace ddpbisect {

struct LoadResult {
  std::optional<Spec> spec;  // set only when there are no errors
  Diagnostics errors;
};

// `file` is shown in messages and anchors relative paths (cwd, dataset paths).
LoadResult load_spec_file(const std::string& file);
LoadResult load_spec_text(const std::string& text, const std::string& file);

// Whether the built-in worker can run `device: cuda` stages: compiled in from the build, or
// declared with DDPBISECT_WORKER_CUDA=1 beside DDPBISECT_WORKER (a worker built on a GPU machine).
bool worker_has_cuda();

}  // namespace ddpbisect
