// How the CLI says what went wrong: "ddpbisect CMD: message" lines on stderr, or, under --json,
// one JSON object on stdout; and the exit code bad input and internal errors get (under
// `check --bisect` both must abort git bisect run: 128 or more).
#pragma once

#include <string>

#include "common/diagnostic.hpp"

namespace ddpbisect::cli {

struct ErrorMode {
  std::string command;  // "" before a subcommand is known
  bool json = false;    // the subcommand's --json: errors as JSON on stdout
  bool bisect = false;  // check --bisect
};
void set_error_mode(const ErrorMode& mode);
const ErrorMode& error_mode();

// "ddpbisect: " or "ddpbisect CMD: ".
std::string prefix();
// One bad-input message (printed now, or kept for the JSON object).
void error(const std::string& message);
// A located error in a spec: printed as file:line:column (what editors and CI annotate).
void error(const Diagnostic& d);
// Every error of a spec that did not load, then "N errors in FILE".
void errors(const Diagnostics& ds, const std::string& file);
// A line of information on stderr, prefixed; nothing under --json.
void note(const std::string& message);

// End the command on bad input: print the JSON object when --json, return the exit code.
int bad_input();
// End the command on an error of ddpbisect itself.
int internal_error(const std::string& what);

}  // namespace ddpbisect::cli
