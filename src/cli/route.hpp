// Before CLI11 sees a command line: which subcommand it means (`ddpbisect [FLAGS] SPEC` is
// reduce, wherever the flags are), did-you-mean for a mistyped subcommand, and unknown flags
// named with a suggestion, all before a missing-argument error could hide them.
#pragma once

#include <CLI/CLI.hpp>
#include <set>
#include <string>
#include <vector>

namespace ddpbisect::cli {

struct Route {
  std::vector<std::string> args;  // with the subcommand first
  bool implicit_reduce = false;   // `ddpbisect SPEC`: the user named no subcommand
  std::string error;              // non-empty: a message for the user (bad input)
};

// `reduce_value_flags`: reduce's flags that take a value (their value is not the spec).
Route route_arguments(const std::vector<std::string>& args,
                      const std::vector<std::string>& commands,
                      const std::set<std::string>& reduce_value_flags);

// The first flag among `args` (after the subcommand) that `sub` does not know, as a message
// with a suggestion; "" when every flag is known. `all` is the top-level app (other
// subcommands' flags are named when the flag belongs to one of them).
std::string unknown_flag(const CLI::App& all, const CLI::App& sub,
                         const std::vector<std::string>& args);

// Whether `--json` is among `args` (before a `--`).
bool has_flag(const std::vector<std::string>& args, const std::string& flag);

}  // namespace ddpbisect::cli
