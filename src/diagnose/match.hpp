// Regular-expression helpers for the diagnosis: RE2 fails a whole match when a numeric argument's
// optional group did not take part, so groups are captured as text and converted here.
#pragma once

#include <re2/re2.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpbisect {

// Every group of the first match of `re` in `text` ("" for one that did not take part);
// nullopt when `re` does not match.
inline std::optional<std::vector<std::string>> captures(std::string_view text, const RE2& re) {
  int n = re.NumberOfCapturingGroups();
  std::vector<re2::StringPiece> groups(static_cast<size_t>(n) + 1);
  if (!re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED,
                groups.data(), n + 1))
    return std::nullopt;
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i)
    out.emplace_back(
        groups[static_cast<size_t>(i)].data() ? std::string(groups[static_cast<size_t>(i)]) : "");
  return out;
}

// A decimal number, or `fallback` for "" or anything else.
inline long long number(const std::string& s, long long fallback = -1) {
  if (s.empty()) return fallback;
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    return used == s.size() ? v : fallback;
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace ddpbisect
