#include "reduce/engine.hpp"

#include <algorithm>

namespace ddpbisect {

namespace {
std::vector<ItemSet> split(const ItemSet& items, size_t n) {
  std::vector<ItemSet> chunks;
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t end = start + (items.size() - start) / (n - i);
    chunks.emplace_back(items.begin() + static_cast<long>(start),
                        items.begin() + static_cast<long>(end));
    start = end;
  }
  return chunks;
}

ItemSet without(const ItemSet& items, const ItemSet& chunk) {
  ItemSet out;
  std::set_difference(items.begin(), items.end(), chunk.begin(), chunk.end(),
                      std::back_inserter(out));
  return out;
}

// The first interesting candidate, in order.
int first_true(const std::vector<ItemSet>& candidates, const Test& test) {
  for (size_t i = 0; i < candidates.size(); ++i)
    if (test(candidates[i])) return static_cast<int>(i);
  return -1;
}
}  // namespace

ItemSet ddmin(const ItemSet& input, const Test& test, bool try_empty, bool complement_first) {
  ItemSet items = input;
  if (items.empty()) return items;
  if (try_empty && test(ItemSet{})) return {};
  size_t n = 2;
  while (items.size() >= 2) {
    n = std::min(n, items.size());
    auto chunks = split(items, n);
    std::vector<ItemSet> complements;
    for (const auto& c : chunks) complements.push_back(without(items, c));
    auto try_subsets = [&] {
      int hit = first_true(chunks, test);
      if (hit < 0) return false;
      items = chunks[static_cast<size_t>(hit)];
      n = 2;
      return true;
    };
    auto try_complements = [&] {
      int hit = first_true(complements, test);
      if (hit < 0) return false;
      items = complements[static_cast<size_t>(hit)];
      n = std::max<size_t>(n - 1, 2);
      return true;
    };
    // For n == 2 the subsets are the complements: test them once.
    bool reduced = complement_first ? (try_complements() || (n > 2 && try_subsets()))
                                    : (try_subsets() || (n > 2 && try_complements()));
    if (reduced) continue;
    if (n >= items.size()) break;  // 1-minimal: no single item can go
    n = std::min(items.size(), 2 * n);
  }
  if (items.size() == 1 && !try_empty && test(ItemSet{})) return {};
  return items;
}

ItemSet find_culprits(const ItemSet& items, const Test& test) {
  ItemSet known;
  ItemSet rest = items;  // invariant: known + rest is interesting
  while (true) {
    if (test(known)) break;
    if (rest.empty()) return items;  // not monotone: keep what we had
    // The smallest prefix of `rest` that, with `known`, is interesting; its last item is needed.
    // Probe the prefix without the last item first: after a shortest-prefix search (the sample
    // count pass) that answer is already known, and the last item is a culprit at no cost.
    size_t lo = 1, hi = rest.size();
    if (hi > 1) {
      ItemSet cand = known;
      cand.insert(cand.end(), rest.begin(), rest.end() - 1);
      std::sort(cand.begin(), cand.end());
      if (!test(cand))
        lo = hi;
      else
        hi = hi - 1;
    }
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      ItemSet cand = known;
      cand.insert(cand.end(), rest.begin(), rest.begin() + static_cast<long>(mid));
      std::sort(cand.begin(), cand.end());
      if (test(cand))
        hi = mid;
      else
        lo = mid + 1;
    }
    known.push_back(rest[hi - 1]);
    std::sort(known.begin(), known.end());
    rest.resize(hi - 1);
  }
  // Each culprit was needed when found; check that each still is with the later ones present.
  for (size_t i = 0; known.size() > 1 && i < known.size();) {
    ItemSet cand = known;
    cand.erase(cand.begin() + static_cast<long>(i));
    if (test(cand))
      known = cand;
    else
      ++i;
  }
  return known;
}

int64_t smallest_interesting(int64_t lo, int64_t hi, const std::function<bool(int64_t)>& test) {
  if (lo >= hi) return hi;
  if (test(lo)) return lo;
  // test(lo) fails, test(hi) holds.
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (test(mid))
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

}  // namespace ddpbisect
