#include "common/duration.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

TEST(Duration, ParsesUnits) {
  EXPECT_EQ(parse_duration("90s")->count(), 90'000);
  EXPECT_EQ(parse_duration("5m")->count(), 300'000);
  EXPECT_EQ(parse_duration("2h")->count(), 7'200'000);
  EXPECT_EQ(parse_duration("250ms")->count(), 250);
  EXPECT_EQ(parse_duration("1.5s")->count(), 1500);
  EXPECT_EQ(parse_duration("12")->count(), 12'000);
}

TEST(Duration, RejectsGarbage) {
  EXPECT_FALSE(parse_duration(""));
  EXPECT_FALSE(parse_duration("5 parsecs"));
  EXPECT_FALSE(parse_duration("s"));
  EXPECT_FALSE(parse_duration("1.2.3s"));
  EXPECT_FALSE(parse_duration("-5s"));
}

TEST(Duration, FormatsShortestExactForm) {
  EXPECT_EQ(format_duration(Millis(90'000)), "90s");
  EXPECT_EQ(format_duration(Millis(300'000)), "5m");
  EXPECT_EQ(format_duration(Millis(7'200'000)), "2h");
  EXPECT_EQ(format_duration(Millis(1500)), "1500ms");
}
