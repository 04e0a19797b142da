#include "reduce/engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace ddpbisect;

namespace {
ItemSet range(size_t n) {
  ItemSet v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}
// Interesting when every culprit is present.
struct Culprits {
  std::set<size_t> needed;
  int tests = 0;
  bool operator()(const ItemSet& s) {
    ++tests;
    return std::all_of(needed.begin(), needed.end(),
                       [&](size_t c) { return std::binary_search(s.begin(), s.end(), c); });
  }
  Test test() {
    return [this](const ItemSet& s) { return (*this)(s); };
  }
};
}  // namespace

TEST(Ddmin, FindsTwoCulpritsInBothOrders) {
  for (bool complement_first : {true, false}) {
    Culprits c{{3, 17}};
    ItemSet got = ddmin(range(32), c.test(), false, complement_first);
    EXPECT_EQ(got, (ItemSet{3, 17})) << complement_first;
  }
}

TEST(Ddmin, EmptyWhenNothingIsNeeded) {
  Culprits c{{}};
  EXPECT_TRUE(ddmin(range(5), c.test(), true).empty());
  EXPECT_EQ(c.tests, 1);
}

TEST(FindCulprits, OneCulpritCostsAboutLog2N) {
  Culprits c{{37}};
  ItemSet got = find_culprits(range(512), [&](const ItemSet& s) { return c(s); });
  EXPECT_EQ(got, (ItemSet{37}));
  EXPECT_LE(c.tests, 12);  // log2(512) = 9, plus the empty set and the probe
}

TEST(FindCulprits, SeveralCulpritsAre1Minimal) {
  Culprits c{{5, 40, 41, 99}};
  ItemSet got = find_culprits(range(128), [&](const ItemSet& s) { return c(s); });
  EXPECT_EQ(got, (ItemSet{5, 40, 41, 99}));
}

TEST(FindCulprits, KeepsEverythingWhenNotMonotone) {
  // Interesting only for the full set: no subset works.
  int n = 0;
  ItemSet got = find_culprits(range(6), [&](const ItemSet& s) {
    ++n;
    return s.size() == 6;
  });
  EXPECT_EQ(got.size(), 6u);
}

TEST(SmallestInteresting, ProbesThenBinarySearches) {
  int tests = 0;
  auto at_least_48 = [&](int64_t v) {
    ++tests;
    return v >= 48;
  };
  EXPECT_EQ(smallest_interesting(1, 64, at_least_48), 48);
  EXPECT_LE(tests, 8);
  EXPECT_EQ(smallest_interesting(1, 64, [](int64_t) { return true; }), 1);
  EXPECT_EQ(smallest_interesting(5, 5, [](int64_t) { return true; }), 5);
}
