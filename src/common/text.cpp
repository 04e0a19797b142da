#include "common/text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace ddpbisect {

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  for (const auto& w : split(s, ' '))
    if (!w.empty()) out.push_back(w);
  return out;
}

std::string join(const std::vector<int>& numbers, std::string_view sep) {
  std::vector<std::string> parts;
  for (int n : numbers) parts.push_back(std::to_string(n));
  return join(parts, sep);
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: a swap of two neighbours ("rasie", "stpes") is one edit, as a
  // typist makes it, not two.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // A typo is at most a third of the word wrong (at least 1, at most 3 edits).
  size_t allowed = std::clamp<size_t>(std::max(word.size(), best.size()) / 3, 1, 3);
  return best_d <= allowed ? best : std::string();
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string suggest(std::string_view word, const std::vector<std::string>& candidates,
                    const std::vector<std::pair<std::string, std::string>>& meanings) {
  const std::string lower = lowercase(word);
  auto allowed = [&](const std::string& c) {
    return std::find(candidates.begin(), candidates.end(), c) != candidates.end();
  };
  for (const auto& c : candidates)
    if (lowercase(c) == lower) return c;
  for (const auto& [said, meant] : meanings)
    if (said == lower && allowed(meant)) return meant;
  std::string guess = closest_match(lower, candidates);
  return guess;
}

std::string failure_headline(const std::vector<int>& ranks, const std::string& exception,
                             const std::string& message, const std::string& where) {
  std::string first = message.substr(0, message.find('\n'));
  std::vector<int> known;
  for (int r : ranks)
    if (r >= 0) known.push_back(r);
  std::string s =
      known.empty() ? "" : (known.size() == 1 ? "rank " : "ranks ") + join(known, ", ") + ": ";
  if (!exception.empty()) s += exception + (first.empty() ? "" : ": ");
  s += first;
  if (!where.empty()) s += " (" + where + ")";
  return s;
}

std::string format_number(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string plural(long long n, const std::string& singular, const std::string& plural_form) {
  return std::to_string(n) + " " +
         (n == 1                ? singular
          : plural_form.empty() ? singular + "s"
                                : plural_form);
}

std::string shell_quote(std::string_view s) {
  bool safe = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  });
  if (safe) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

namespace {
// The length of the well-formed UTF-8 sequence at s[i] (a byte >= 0x80), or 0 when there is none:
// no overlong form, no surrogate, nothing above U+10FFFF.
size_t utf8_length_at(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                     : (c >> 4) == 14         ? 3
                     : c >= 0xf0 && c <= 0xf4 ? 4
                                              : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) ||  // overlong, surrogates
      (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90))    // overlong, above U+10FFFF
    return 0;
  return len;
}
}  // namespace

size_t utf8_error(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
    } else if (const size_t len = utf8_length_at(s, i)) {
      i += len;
    } else {
      return i;
    }
  }
  return std::string_view::npos;
}

std::string visible_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f))
        out += static_cast<char>(c);
      else if (c == 0x7f)
        out += "\xe2\x90\xa1";  // U+2421 SYMBOL FOR DELETE
      else {                    // U+2400 + c: the control picture (ESC is U+241B, shown as ␛)
        out += "\xe2\x90";
        out += static_cast<char>(0x80 + c);
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence passes; any other byte becomes U+FFFD.
    const size_t len = utf8_length_at(s, i);
    bool ok = len > 0;
    const unsigned char c1 = ok ? static_cast<unsigned char>(s[i + 1]) : 0;
    // No C1 control (U+0080-U+009F: CSI acts like ESC [ on many terminals).
    if (ok && len == 2) ok = !(c == 0xc2 && c1 <= 0x9f);
    // No U+FFFE, U+FFFF: not XML characters.
    if (ok && len == 3)
      ok = !(c == 0xef && c1 == 0xbf && static_cast<unsigned char>(s[i + 2]) >= 0xbe);
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

std::string markup_escape(std::string_view s) {
  std::string out;
  const std::string v = visible_text(s);
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool is_csv_header(const std::vector<std::string>& cells) {
  for (const auto& c : cells) {
    const std::string t(trim(c));
    char* end = nullptr;
    std::strtof(t.c_str(), &end);
    if (!t.empty() && end == t.c_str() + t.size()) return false;
  }
  return true;
}

long long csv_data_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in) return -1;
  long long rows = 0;
  bool first = true;
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty() || line[0] == '#') continue;
    if (!(first && is_csv_header(split(line, ',')))) ++rows;
    first = false;
  }
  return rows;
}

}  // namespace ddpbisect
