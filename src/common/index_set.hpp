// A set of non-negative sample indices stored as sorted disjoint ranges, with the compact
// text form used in specs, placeholders and reports: "0-36,38-255".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddpbisect {

class IndexSet {
 public:
  using Range = std::pair<int64_t, int64_t>;  // inclusive [first, last]
  // The largest index a spec or a journal may name (2^53 - 1, the largest integer a JSON reader
  // that uses doubles keeps exact); no data set comes near it, and sizes never overflow.
  static constexpr int64_t kMaxIndex = (int64_t{1} << 53) - 1;

  IndexSet() = default;
  static IndexSet first_n(int64_t n);                    // 0..n-1
  static IndexSet from_indices(std::vector<int64_t> v);  // any order, duplicates allowed

  // Parses "0-36,38-255" (spaces allowed around items; indices up to kMaxIndex). On failure
  // returns nullopt and sets `error` and `error_offset` (byte offset in `text` of the offending
  // item).
  static std::optional<IndexSet> parse(std::string_view text, std::string* error = nullptr,
                                       size_t* error_offset = nullptr);

  std::string to_string() const;  // compact form; "" for the empty set
  int64_t size() const;           // saturates at INT64_MAX (0-INT64_MAX, built in code)
  bool empty() const { return ranges_.empty(); }
  bool contains(int64_t i) const;
  int64_t max() const { return ranges_.empty() ? -1 : ranges_.back().second; }
  std::vector<int64_t> indices() const;  // every index, ascending
  const std::vector<Range>& ranges() const { return ranges_; }

  // The first n indices of this set, ascending.
  IndexSet prefix(int64_t n) const;

  bool operator==(const IndexSet& o) const { return ranges_ == o.ranges_; }
  bool operator!=(const IndexSet& o) const { return !(*this == o); }

 private:
  void add_range(int64_t a, int64_t b);  // appends, requires ascending order
  std::vector<Range> ranges_;
};

}  // namespace ddpbisect
