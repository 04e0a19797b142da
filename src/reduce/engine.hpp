// The generic reduction engine. It knows nothing about what is reduced: a set of items (indices
// into the dimension's list) or an integer, and a test that says whether a candidate is still
// interesting. Passes (passes/*.cpp) map their dimension onto these. Each algorithm asks one
// question at a time and depends only on the answers, so run_search (search.hpp) can run it
// with speculation.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ddpbisect {

using ItemSet = std::vector<size_t>;  // ascending indices into a dimension's items
using Test = std::function<bool(const ItemSet&)>;

// Delta debugging (Zeller's ddmin): a 1-minimal subset of `items` that is still interesting,
// given that `items` itself is. Tries the empty set first when `try_empty`. Complement-first (the
// default, as in picire) tries removing each chunk before keeping one; the textbook order
// (Zeller and Hildebrandt 2002) tries each chunk alone first.
ItemSet ddmin(const ItemSet& items, const Test& test, bool try_empty, bool complement_first = true);

// Finds the culprits one at a time by binary search over prefixes: each costs about log2(n)
// tests, so k culprits among n cost about k*log2(n) (ddmin: about 2k*log2(n)). Assumes that
// adding items to an interesting set keeps it interesting; the result is then 1-minimal.
ItemSet find_culprits(const ItemSet& items, const Test& test);

// The smallest value in [lo, hi] for which `test` holds, given that test(hi) holds: probes `lo`
// first, then binary search. Returns hi when nothing smaller is interesting.
int64_t smallest_interesting(int64_t lo, int64_t hi, const std::function<bool(int64_t)>& test);

}  // namespace ddpbisect
