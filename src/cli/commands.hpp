// One function per subcommand; main.cpp only parses flags and dispatches here.
#pragma once

#include <string>
#include <vector>

namespace ddpbisect::cli {

struct ValidateOptions {
  std::string spec;
  bool json = false;
};
int validate(const ValidateOptions& o);

// Subcommands whose issue has not landed yet say so and exit 1.
int not_yet(const std::string& command, const std::string& issue);

}  // namespace ddpbisect::cli
