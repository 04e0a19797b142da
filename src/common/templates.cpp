#include "common/templates.hpp"

#include <set>
#include <stdexcept>

namespace ddpbisect {

namespace {
bool name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
}  // namespace

std::string fill_template(const std::string& text,
                          const std::map<std::string, std::string>& values) {
  std::string out;
  out.reserve(text.size());
  std::set<std::string> used;
  size_t i = 0;
  while (i < text.size()) {
    size_t at = text.find('@', i);
    if (at == std::string::npos) break;
    size_t end = at + 1;
    while (end < text.size() && name_char(text[end])) ++end;
    if (end == at + 1 || end >= text.size() || text[end] != '@') {  // not a placeholder: "[@]"
      out.append(text, i, at + 1 - i);
      i = at + 1;
      continue;
    }
    const std::string name = text.substr(at + 1, end - at - 1);
    auto it = values.find(name);
    if (it == values.end()) throw std::logic_error("template: no value for @" + name + "@");
    out.append(text, i, at - i);
    out += it->second;
    used.insert(name);
    i = end + 1;
  }
  out.append(text, i, std::string::npos);
  for (const auto& [name, _] : values)
    if (!used.count(name)) throw std::logic_error("template: no @" + name + "@ takes its value");
  return out;
}

}  // namespace ddpbisect
