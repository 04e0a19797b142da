// The category table (see categories.hpp), made from common/categories.def, and the matching
// of its patterns.
#include "diagnose/categories.hpp"

#include <re2/re2.h>

#include <memory>

#include "common/text.hpp"

namespace ddpbisect {

const std::vector<Category>& categories() {
  static const std::vector<Category> table = {
#define DDPBISECT_CATEGORY(name, primary, pattern, debug, meaning) \
  {#name, primary, pattern, debug, meaning},
#include "common/categories.def"
#undef DDPBISECT_CATEGORY
  };
  return table;
}

const Category* find_category(const std::string& name) {
  for (const auto& c : categories())
    if (name == c.name) return &c;
  return nullptr;
}

bool is_primary(const std::string& category) {
  const Category* c = find_category(category);
  return c && c->primary;
}

std::map<std::string, std::string> category_debug_variables(const std::string& category) {
  std::map<std::string, std::string> out;
  const Category* c = find_category(category);
  if (!c) return out;
  for (const auto& item : split(c->debug, ' ')) {
    size_t eq = item.find('=');
    if (eq != std::string::npos) out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

namespace {
struct Compiled {
  const Category* category;
  std::unique_ptr<RE2> re;
};

const std::vector<Compiled>& compiled() {
  static const std::vector<Compiled> v = [] {
    std::vector<Compiled> out;
    for (const auto& c : categories())
      if (*c.pattern) out.push_back({&c, std::make_unique<RE2>(c.pattern)});
    return out;
  }();
  return v;
}

std::string first_match(const std::string& text) {
  for (const auto& c : compiled())
    if (RE2::PartialMatch(text, *c.re)) return c.category->name;
  return "";
}
}  // namespace

std::string classify_exception(const std::string& type, const std::string& message) {
  std::string category = first_match(type + ": " + message);
  if (!category.empty()) return category;
  if (type == "MemoryError") return cat::host_oom;
  if (type.find("::") != std::string::npos) return cat::cpp_exception;
  return cat::python_exception;
}

std::string classify_line(const std::string& line) {
  return first_match(line);
}

std::string quoted_primary(const std::string& text) {
  for (const auto& c : compiled())
    if (c.category->primary && RE2::PartialMatch(text, *c.re)) return c.category->name;
  return "";
}

}  // namespace ddpbisect
