// Index sets ("0-36,38-255"): a failed parse says where, a parsed set is sorted disjoint ranges
// of non-negative indices that prints and parses back to itself, and its size, membership and
// prefixes agree with its ranges.
#include "common/index_set.hpp"
#include "fuzz_util.hpp"

using namespace ddpbisect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  size_t offset = SIZE_MAX;
  auto s = IndexSet::parse(text, &error, &offset);
  if (!s) {
    fuzz::check(!error.empty() && offset <= text.size(), "a failed parse says what and where",
                error);
    return 0;
  }
  const auto& ranges = s->ranges();
  for (size_t i = 0; i < ranges.size(); ++i) {
    fuzz::check(ranges[i].first >= 0 && ranges[i].first <= ranges[i].second,
                "ranges are ordered pairs of non-negative indices", s->to_string());
    if (i > 0)
      fuzz::check(ranges[i - 1].second < ranges[i].first - 1,
                  "ranges are sorted, disjoint and not adjacent", s->to_string());
  }
  const std::string printed = s->to_string();
  auto again = IndexSet::parse(printed);
  fuzz::check(again && *again == *s, "to_string parses back to the same set", printed);
  const int64_t n = s->size();
  fuzz::check(n >= 0 && n >= static_cast<int64_t>(ranges.size()), "the size counts the ranges",
              printed);
  if (!s->empty()) {
    fuzz::check(s->contains(ranges.front().first) && s->contains(s->max()),
                "the set contains its ends", printed);
    fuzz::check(!s->contains(s->max() == INT64_MAX ? -1 : s->max() + 1), "the set ends at its max",
                printed);
    const IndexSet half = s->prefix(n / 2 + 1);
    fuzz::check(half.size() == n / 2 + 1, "a prefix has the size asked for", printed);
  }
  return 0;
}
