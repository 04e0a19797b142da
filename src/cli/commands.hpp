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

struct ConfigOptions {
  std::string spec;
  std::string stage;  // default: the last (largest) stage
  std::vector<std::string> sets;
};
// Prints the DDPBISECT_CONFIG JSON of one trial: what `ddpbisect-worker --config` reads.
int config(const ConfigOptions& o);

struct RunOptions {
  std::string spec;
  std::string stage;  // default: the last (largest) stage
  std::vector<std::string> sets;
  std::string out;  // default: the spec's report.dir
  bool json = false;
};
// Runs exactly one trial; exit 0 pass, 1 fail, 125 infra, 2 bad input, 130 interrupted.
int run(const RunOptions& o);

// Subcommands whose issue has not landed yet say so and exit 1.
int not_yet(const std::string& command, const std::string& issue);

}  // namespace ddpbisect::cli
