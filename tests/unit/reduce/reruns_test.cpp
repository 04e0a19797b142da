// The rerun policy's numbers.
#include "reduce/reruns.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace ddpbisect;

TEST(Reruns, TrustNeedsAHalfTimeFlakeToShowAtTheConfidence) {
  EXPECT_EQ(reruns_to_trust(0.95), 5);  // 0.5^5 = 3.1 % <= 5 % < 0.5^4
  EXPECT_EQ(reruns_to_trust(0.999), 10);
  EXPECT_EQ(reruns_to_trust(0.5), 1);
  for (double c : {0.8, 0.9, 0.95, 0.99, 0.999}) {
    int n = reruns_to_trust(c);
    EXPECT_LE(std::pow(0.5, n), 1 - c + 1e-12) << c;
    EXPECT_GT(std::pow(0.5, n - 1), 1 - c) << c;
  }
}

TEST(Reruns, RepeatsGrowAsTheRateFalls) {
  EXPECT_EQ(repeats_for(1.0, 0.95), 1);
  EXPECT_EQ(repeats_for(0.5, 0.95), 5);
  EXPECT_EQ(repeats_for(0.6, 0.999), 8);  // 0.4^8 = 0.07 % <= 0.1 %
  EXPECT_EQ(repeats_for(0.95, 0.95), 2);  // never fewer than two for a flaky target
  EXPECT_EQ(repeats_for(0.01, 0.999), 30);
}

namespace {
Tally tally(int failures, int runs) {
  Tally t;
  for (int i = 0; i < runs; ++i) t.add(i < failures);
  return t;
}
}  // namespace

TEST(Reruns, MeasuredRepeatsAllowForWhatTenRunsCannotTell) {
  EXPECT_EQ(repeats_for(tally(3, 3), 0.95), 1);
  // 7 of 10: the estimate 0.7 would give 3 (0.3^3 = 2.7 %); averaged over the rates 7 of 10
  // leaves possible, 3 misses in a row happen 5.5 % of the time and 4 happen 2.6 %.
  EXPECT_EQ(repeats_for(tally(7, 10), 0.95), 4);
  EXPECT_GT(repeats_for(tally(7, 10), 0.95), repeats_for(0.7, 0.95));
  // The same rate seen over more runs is known better and needs fewer.
  EXPECT_LT(repeats_for(tally(70, 100), 0.95), repeats_for(tally(7, 10), 0.95));
  EXPECT_EQ(repeats_for(tally(1, 10), 0.95), 30);
  EXPECT_EQ(repeats_for(tally(9, 10), 0.5), 2);  // never fewer than two for a flaky target
  for (int f = 1; f < 10; ++f)
    EXPECT_GE(repeats_for(tally(f, 10), 0.99), repeats_for(tally(f, 10), 0.95)) << f;
}

TEST(Reruns, ConfirmPaysOnlyWhatTrustStillNeeds) {
  EXPECT_EQ(confirm_reruns(-1, false, kRerunsBeforeReduction, 0.95), 3);
  EXPECT_EQ(confirm_reruns(-1, false, 7, 0.95), 0);
  EXPECT_EQ(confirm_reruns(-1, true, 2, 0.95), kFlakyConfirmRuns);
  EXPECT_EQ(confirm_reruns(1, true, 2, 0.95), 1);  // --confirm
}

TEST(Reruns, TallyCountsReproductions) {
  Tally t;
  t.add(true);
  t.add(true);
  EXPECT_TRUE(t.every_time());
  t.add(false);
  EXPECT_FALSE(t.every_time());
  EXPECT_NEAR(t.rate(), 2.0 / 3, 1e-9);
  EXPECT_EQ(t.text(), "2 of 3");
}
