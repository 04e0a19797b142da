// Small string helpers shared by every stage: trimming, splitting, joining, edit distance.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddpbisect {

std::string_view trim(std::string_view s);
std::vector<std::string> split(std::string_view s, char sep);
// The words of s, split at runs of spaces: "a  b" is {"a", "b"}, "" is {}.
std::vector<std::string> words(std::string_view s);
// A CSV row of column names: no cell reads as a number (one number among words is a data row
// with a typo, for the reader to refuse).
bool is_csv_header(const std::vector<std::string>& cells);
// The data rows of a CSV file: lines less blank ones, '#' comments and a first-row header; -1
// when it cannot be read.
long long csv_data_rows(const std::string& path);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string join(const std::vector<int>& numbers, std::string_view sep);
// Replaces every occurrence of `from` (not empty) in `s`, left to right, without rescanning.
void replace_all(std::string& s, std::string_view from, std::string_view to);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);

// Edit distance for "did you mean" suggestions: insertions, deletions, substitutions and swaps
// of neighbours each count one.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

std::string lowercase(std::string_view s);

// What the user probably meant by `word` among `candidates`: the same word in other case, then
// a word said by meaning (`meanings` pairs what people write with the candidate they mean:
// {"gpu", "cuda"}; a pair counts only when its candidate is offered), then the closest typo.
// "" when nothing is plausible.
std::string suggest(std::string_view word, const std::vector<std::string>& candidates,
                    const std::vector<std::pair<std::string, std::string>>& meanings = {});

// How a failure is named wherever people read it (status line, summary, report headline):
// "rank 1: RuntimeError: planted failure (trainer.cpp:42)", or "ranks 2, 3: ..." for a failure
// several ranks share with nothing to say which was first; empty parts (no rank, negative ranks)
// are left out, the message is its first line.
std::string failure_headline(const std::vector<int>& ranks, const std::string& exception,
                             const std::string& message, const std::string& where);

// Numbers as people write them: "0.92" (at most `digits` decimals, no trailing zeros), and
// "1 rank" / "2 ranks".
std::string format_number(double v, int digits = 2);
std::string plural(long long n, const std::string& singular, const std::string& plural_form = "");

// Text that shows what it holds and does nothing else wherever it is pasted or printed: control
// characters other than newline and tab become their visible pictures (ESC is "␛", so an ANSI
// colour code shows as text), bytes that are not UTF-8 become U+FFFD. XML 1.0 cannot carry
// control characters at all, and a terminal would obey them.
std::string visible_text(std::string_view s);

// The byte offset of the first byte in `s` that does not begin a well-formed UTF-8 sequence
// (overlong forms, surrogates and code points above U+10FFFF are not), or npos when it is all
// UTF-8: what JSON, YAML and every reader of our reports require.
size_t utf8_error(std::string_view s);

// visible_text() with &, <, >, " and ' escaped, for HTML and XML text and attributes.
std::string markup_escape(std::string_view s);

// Quotes a string for a POSIX shell (single quotes), for scripts we write, never for execution.
std::string shell_quote(std::string_view s);

}  // namespace ddpbisect
