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

// Written so that no sum overflows, whatever the indices (a - 1 >= -1: a is non-negative).
void IndexSet::add_range(int64_t a, int64_t b) {
  if (!ranges_.empty() && a - 1 <= ranges_.back().second) {
    ranges_.back().second = std::max(ranges_.back().second, b);
  } else {
    ranges_.push_back({a, b});
  }
}

// A non-negative index: "" when it is one, else what is wrong with it.
static std::string parse_index(std::string_view s, int64_t& out) {
  const std::string largest = "the largest index is " + std::to_string(IndexSet::kMaxIndex);
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  if (s.empty() || p != end || s.front() == '-') return "not an index";
  if (ec == std::errc::result_out_of_range) return "index too large (" + largest + ")";
  if (ec != std::errc()) return "not an index";
  if (out > IndexSet::kMaxIndex) return "index " + std::string(s) + " too large (" + largest + ")";
  return "";
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
    const auto bad = [&](const std::string& why) {
      if (why == "not an index")
        return fail(item_off,
                    "expected an index or a range 'first-last', found '" + std::string(item) + "'");
      return fail(item_off, "'" + std::string(item) + "': " + why);
    };
    if (dash == std::string_view::npos) {
      if (std::string why = parse_index(item, a); !why.empty()) return bad(why);
      b = a;
    } else {
      std::string why = parse_index(trim(item.substr(0, dash)), a);
      if (why.empty()) why = parse_index(trim(item.substr(dash + 1)), b);
      if (!why.empty()) return bad(why);
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

// Saturates at INT64_MAX: only the set 0-INT64_MAX (built in code, never parsed) reaches it.
int64_t IndexSet::size() const {
  uint64_t n = 0;
  for (const auto& [a, b] : ranges_) n += static_cast<uint64_t>(b - a) + 1;
  return n > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(n);
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
    const int64_t take = b - a < n ? b - a + 1 : n;  // b - a + 1 <= n: no overflow
    s.ranges_.push_back({a, a + take - 1});
    n -= take;
  }
  return s;
}

}  // namespace ddpbisect
