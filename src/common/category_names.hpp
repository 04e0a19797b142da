// The failure categories' names as constants, from the one table (common/categories.def): code
// compares and assigns cat::hang, never "hang", so a misspelt category does not compile. In
// common because the spec checks match.signature.category against them; their patterns and
// behaviour are diagnose's (diagnose/categories.hpp).
#pragma once

#include <string>
#include <vector>

namespace ddpbisect {

namespace cat {
#define DDPBISECT_CATEGORY(name, primary, pattern, debug, meaning) \
  inline constexpr const char name[] = #name;
#include "common/categories.def"
#undef DDPBISECT_CATEGORY
}  // namespace cat

// Every category's name, in the table's order.
inline const std::vector<std::string>& category_names() {
  static const std::vector<std::string> names = {
#define DDPBISECT_CATEGORY(name, primary, pattern, debug, meaning) #name,
#include "common/categories.def"
#undef DDPBISECT_CATEGORY
  };
  return names;
}

}  // namespace ddpbisect
