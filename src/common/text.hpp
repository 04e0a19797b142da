// Small string helpers shared by every stage: trimming, splitting, joining, edit distance.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ddpbisect {

std::string_view trim(std::string_view s);
std::vector<std::string> split(std::string_view s, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// Replaces every occurrence of `from` (not empty) in `s`, left to right, without rescanning.
void replace_all(std::string& s, std::string_view from, std::string_view to);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);

// Levenshtein distance, used for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// Escapes &, <, >, " and ' for HTML and XML text and attributes, and drops control characters
// other than newline and tab (XML 1.0 cannot carry them).
std::string markup_escape(std::string_view s);

// Quotes a string for a POSIX shell (single quotes), for scripts we write, never for execution.
std::string shell_quote(std::string_view s);

}  // namespace ddpbisect
