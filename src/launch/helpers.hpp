// The programs and files ddpbisect runs beside itself, and where this binary finds each: the
// build tree, an install prefix or a venv (pip), or the override variable. `--version` prints
// them; `doctor` checks the ones a spec needs.
#pragma once

#include <string>
#include <vector>

namespace ddpbisect {

struct Helper {
  const char* name;      // worker, isolate, warm, agent
  const char* variable;  // the environment variable that overrides where it is
  std::string path;      // where it is looked for; "" when no place has it (the agent)
  bool found;            // whether that path exists
};

// worker, isolate, warm, agent, in that order.
std::vector<Helper> helpers();

}  // namespace ddpbisect
