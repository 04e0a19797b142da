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
