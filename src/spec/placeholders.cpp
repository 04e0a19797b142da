#include "spec/placeholders.hpp"

namespace ddpbisect {

namespace {
// Calls on_text for literal text and on_name for each placeholder; false on a malformed one.
template <typename Text, typename Name>
bool scan(const std::string& arg, Text on_text, Name on_name, std::string* error,
          size_t* error_offset) {
  for (size_t i = 0; i < arg.size(); ++i) {
    char c = arg[i];
    if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
      on_text(c);
      ++i;
    } else if (c == '{') {
      size_t close = arg.find('}', i + 1);
      if (close == std::string::npos) {
        if (error) *error = "unterminated placeholder (write {{ for a literal brace)";
        if (error_offset) *error_offset = i;
        return false;
      }
      std::string name = arg.substr(i + 1, close - i - 1);
      if (name.empty() || name.find('{') != std::string::npos) {
        if (error) *error = "empty or malformed placeholder (write {{ for a literal brace)";
        if (error_offset) *error_offset = i;
        return false;
      }
      on_name(name, i);
      i = close;
    } else {
      on_text(c);
    }
  }
  return true;
}
}  // namespace

std::optional<std::vector<std::pair<std::string, size_t>>> placeholder_names(const std::string& arg,
                                                                             std::string* error,
                                                                             size_t* error_offset) {
  std::vector<std::pair<std::string, size_t>> out;
  bool ok = scan(
      arg, [](char) {}, [&](const std::string& n, size_t at) { out.emplace_back(n, at); }, error,
      error_offset);
  if (!ok) return std::nullopt;
  return out;
}

std::string substitute_placeholders(const std::string& arg,
                                    const std::map<std::string, std::string>& values) {
  std::string out;
  bool ok = scan(
      arg, [&](char c) { out += c; },
      [&](const std::string& n, size_t) {
        auto it = values.find(n);
        out += it == values.end() ? "{" + n + "}" : it->second;
      },
      nullptr, nullptr);
  return ok ? out : arg;
}

std::string rank_placeholders_unified(std::string arg) {
  for (const char* k : {"${rank}", "${local_rank}", "${node_rank}"})
    for (size_t at; (at = arg.find(k)) != std::string::npos;) arg.erase(at, 1);
  return arg;
}

}  // namespace ddpbisect
