// A located error in user input: file:line:column, the key path, and what was wrong.
#pragma once

#include <string>
#include <vector>

namespace ddpbisect {

struct Diagnostic {
  std::string file;
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown
  std::string path;  // key path such as stages[1].procs_per_node
  std::string message;

  // "spec.yaml:7:5: error: stages[0].procs_per_node: expected ..."
  std::string to_string() const;
};

using Diagnostics = std::vector<Diagnostic>;

}  // namespace ddpbisect
