#include "cli/errors.hpp"

#include <nlohmann/json.hpp>

#include <iostream>

#include "common/exit_codes.hpp"
#include "common/json_util.hpp"

namespace ddpbisect::cli {

namespace {
ErrorMode g_mode;
nlohmann::json g_errors = nlohmann::json::array();

void print_json(const char* kind, int code) {
  nlohmann::json j = {{"error", kind}, {"exit_code", code}, {"errors", g_errors}};
  if (!g_mode.command.empty()) j["command"] = g_mode.command;
  std::cout << json_text(j, 2) << "\n";
  g_errors = nlohmann::json::array();
}
}  // namespace

void set_error_mode(const ErrorMode& mode) {
  g_mode = mode;
}

const ErrorMode& error_mode() {
  return g_mode;
}

std::string prefix() {
  return g_mode.command.empty() ? "ddpbisect: " : "ddpbisect " + g_mode.command + ": ";
}

void error(const std::string& message) {
  if (g_mode.json)
    g_errors.push_back({{"message", message}});
  else
    std::cerr << prefix() << message << "\n";
}

void error(const Diagnostic& d) {
  if (g_mode.json) {
    nlohmann::json e = {{"message", d.message}, {"file", d.file}, {"text", d.to_string()}};
    if (d.line > 0) e["line"] = d.line;
    if (d.column > 0) e["column"] = d.column;
    if (!d.path.empty()) e["path"] = d.path;
    g_errors.push_back(e);
  } else {
    std::cerr << d.to_string() << "\n";
  }
}

void errors(const Diagnostics& ds, const std::string& file) {
  for (const auto& d : ds) error(d);
  if (!g_mode.json)
    std::cerr << prefix() << ds.size() << (ds.size() == 1 ? " error" : " errors") << " in " << file
              << "\n";
}

void note(const std::string& message) {
  if (!g_mode.json) std::cerr << prefix() << message << "\n";
}

int bad_input() {
  int code = g_mode.bisect ? exit_code::kBisectBadInput : exit_code::kBadInput;
  if (g_mode.json)
    print_json("bad_input", code);
  else if (g_mode.bisect)
    std::cerr << prefix() << "bad input aborts the bisection (exit " << code
              << "): fix it, then run git bisect run again\n";
  return code;
}

int internal_error(const std::string& what) {
  int code = g_mode.bisect ? exit_code::kBisectInternal : exit_code::kInternal;
  if (g_mode.json) {
    g_errors.push_back({{"message", "internal error: " + what}});
    print_json("internal", code);
  } else {
    std::cerr << prefix() << "internal error: " << what
              << (g_mode.bisect ? " (aborting the bisection)" : "") << "\n";
  }
  return code;
}

}  // namespace ddpbisect::cli
