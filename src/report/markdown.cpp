#include "report/markdown.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/text.hpp"

namespace ddpbisect {

namespace {
// The longest run of backticks in `s`.
size_t longest_backtick_run(const std::string& s) {
  size_t best = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}
}  // namespace

std::string md_text(const std::string& s) {
  const std::string v = visible_text(s);
  auto alnum = [&](size_t i) {
    return i < v.size() && std::isalnum(static_cast<unsigned char>(v[i]));
  };
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (c == '\n' || c == '\t') {
      out += ' ';
      continue;
    }
    // An underscore inside a word (python_exception) cannot start emphasis: left as written.
    const bool intraword_underscore = c == '_' && i > 0 && alnum(i - 1) && alnum(i + 1);
    // A list or heading marker only counts at the start of a line.
    const bool line_start = i == 0 && std::strchr("-+=", c) != nullptr;
    if (line_start || (!intraword_underscore && std::strchr("\\`*_[]<>&#!~|", c))) out += '\\';
    out += c;
  }
  return out;
}

std::string md_cell(const std::string& s) {
  return md_text(s);  // '|' is among the escaped characters
}

std::string md_code(const std::string& s) {
  std::string v = visible_text(s);
  replace_all(v, "\n", " ");
  const std::string ticks(longest_backtick_run(v) + 1, '`');
  // A space on each side keeps a backtick at either end from joining the fence.
  const bool pad = !v.empty() && (v.front() == '`' || v.back() == '`');
  return ticks + (pad ? " " : "") + v + (pad ? " " : "") + ticks;
}

std::string md_code_block(const std::string& body, const std::string& language) {
  std::string v = visible_text(body);
  if (v.empty() || v.back() != '\n') v += '\n';
  const std::string fence(std::max<size_t>(3, longest_backtick_run(v) + 1), '`');
  return fence + language + "\n" + v + fence + "\n";
}

}  // namespace ddpbisect
