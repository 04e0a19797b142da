#include "common/index_set.hpp"

#include <algorithm>
#include <charconv>

#include "common/text.hpp"

namespace ddpbisect {

IndexSet IndexSet::first_n(int64_t n) {
  IndexSet s;
  if (n > 0) s.ranges_.push_back({0, n - 1});
  return s;
}

IndexSet IndexSet::from_indices(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  IndexSet s;
  for (int64_t i : v) s.add_range(i, i);
  return s;
}

void IndexSet::add_range(int64_t a, int64_t b) {
  if (!ranges_.empty() && a <= ranges_.back().second + 1) {
    ranges_.back().second = std::max(ranges_.back().second, b);
  } else {
    ranges_.push_back({a, b});
  }
}

static bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

std::optional<IndexSet> IndexSet::parse(std::string_view text, std::string* error,
                                        size_t* error_offset) {
  auto fail = [&](size_t off, std::string msg) -> std::optional<IndexSet> {
    if (error) *error = std::move(msg);
    if (error_offset) *error_offset = off;
    return std::nullopt;
  };
  std::vector<Range> items;
  size_t pos = 0;
  if (trim(text).empty()) return IndexSet();
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    size_t end = comma == std::string_view::npos ? text.size() : comma;
    std::string_view raw = text.substr(pos, end - pos);
    std::string_view item = trim(raw);
    size_t item_off = pos + (item.empty() ? 0 : raw.find(item.front()));
    if (item.empty()) return fail(pos, "empty item in index list");
    size_t dash = item.find('-');
    int64_t a = 0, b = 0;
    if (dash == std::string_view::npos) {
      if (!parse_int(item, a)) {
        return fail(item_off,
                    "expected an index or a range 'first-last', found '" + std::string(item) + "'");
      }
      b = a;
    } else {
      if (!parse_int(trim(item.substr(0, dash)), a) || !parse_int(trim(item.substr(dash + 1)), b)) {
        return fail(item_off,
                    "expected an index or a range 'first-last', found '" + std::string(item) + "'");
      }
      if (b < a) {
        return fail(item_off, "range '" + std::string(item) + "' ends before it starts");
      }
    }
    items.push_back({a, b});
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::sort(items.begin(), items.end());
  IndexSet s;
  for (auto [a, b] : items) s.add_range(a, b);
  return s;
}

std::string IndexSet::to_string() const {
  std::string out;
  for (const auto& [a, b] : ranges_) {
    if (!out.empty()) out += ',';
    out += std::to_string(a);
    if (b != a) out += '-' + std::to_string(b);
  }
  return out;
}

int64_t IndexSet::size() const {
  int64_t n = 0;
  for (const auto& [a, b] : ranges_) n += b - a + 1;
  return n;
}

bool IndexSet::contains(int64_t i) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), Range{i, INT64_MAX});
  if (it == ranges_.begin()) return false;
  --it;
  return i >= it->first && i <= it->second;
}

std::vector<int64_t> IndexSet::indices() const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(size()));
  for (const auto& [a, b] : ranges_)
    for (int64_t i = a; i <= b; ++i) out.push_back(i);
  return out;
}

IndexSet IndexSet::prefix(int64_t n) const {
  IndexSet s;
  for (const auto& [a, b] : ranges_) {
    if (n <= 0) break;
    int64_t take = std::min(n, b - a + 1);
    s.ranges_.push_back({a, a + take - 1});
    n -= take;
  }
  return s;
}

}  // namespace ddpbisect
