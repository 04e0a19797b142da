// The failure categories: one table (common/categories.def) gives each its name, whether it can
// be a root cause, the text that marks it and the variables a debug rerun sets for it. Adding a
// category is one row there plus fixtures (docs/categories.md). Code names a category by its
// constant (common/category_names.hpp: cat::hang), never by a string literal.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/category_names.hpp"

namespace ddpbisect {

struct Category {
  const char* name;
  bool primary;         // can be a root cause; a secondary one is an echo or infrastructure
  const char* pattern;  // RE2, matched on "Type: message" or a free log line; "" = none
  // "NAME=VALUE ..." a debug rerun sets to learn more about this failure; the reducer adds an
  // INFO variant after TORCH_DISTRIBUTED_DEBUG=DETAIL, and DDPBISECT_FLIGHT_RECORDER=1 keeps the
  // Flight Recorder's dumps in the trial folder (observe/stacks.hpp).
  const char* debug;
  const char* meaning;  // one line for docs and --help
};

// Every category, in matching order: the first whose pattern matches names an event.
const std::vector<Category>& categories();
const Category* find_category(const std::string& name);
bool is_primary(const std::string& category);

// The environment variables a debug rerun of a failure in `category` should set (empty when
// none helps). The reducer's debug reruns (reduce/reducer.cpp debug_variants) read only this.
std::map<std::string, std::string> category_debug_variables(const std::string& category);

// The category of an exception from its type and message (python_exception when nothing more
// specific matches; cpp_exception for a C++ type).
std::string classify_exception(const std::string& type, const std::string& message);
// The category of a free-standing log line, or "" when it is not an error line.
std::string classify_line(const std::string& line);
// The first primary category whose pattern `text` matches, skipping the echo rows: the error an
// echo's words quote ("NCCL error in: ..., remote process exited" quotes NCCL's own error), or
// "" when it quotes none.
std::string quoted_primary(const std::string& text);

}  // namespace ddpbisect
