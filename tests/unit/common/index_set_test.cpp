#include "common/index_set.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

TEST(IndexSet, ParsesAndFormatsCompactRanges) {
  auto s = IndexSet::parse("0-36,38-255");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), 255);
  EXPECT_FALSE(s->contains(37));
  EXPECT_TRUE(s->contains(36));
  EXPECT_TRUE(s->contains(38));
  EXPECT_FALSE(s->contains(256));
  EXPECT_EQ(s->to_string(), "0-36,38-255");
}

TEST(IndexSet, MergesOverlapsAndSorts) {
  auto s = IndexSet::parse(" 9, 3-5 ,4-7,8");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->to_string(), "3-9");
  EXPECT_EQ(IndexSet::from_indices({5, 1, 2, 2, 3}).to_string(), "1-3,5");
}

TEST(IndexSet, ReportsErrorsWithOffsets) {
  std::string err;
  size_t off = 99;
  EXPECT_FALSE(IndexSet::parse("0-3,x", &err, &off));
  EXPECT_EQ(off, 4u);
  EXPECT_NE(err.find("'x'"), std::string::npos);
  EXPECT_FALSE(IndexSet::parse("5-2", &err, &off));
  EXPECT_NE(err.find("ends before it starts"), std::string::npos);
  EXPECT_FALSE(IndexSet::parse("1,,2", &err, &off));
  EXPECT_EQ(off, 2u);
  EXPECT_FALSE(IndexSet::parse("-4", &err, &off));
}

TEST(IndexSet, PrefixAndIndices) {
  auto s = *IndexSet::parse("2-4,10-12");
  EXPECT_EQ(s.prefix(4).to_string(), "2-4,10");
  EXPECT_EQ(s.prefix(0).size(), 0);
  EXPECT_EQ(s.indices(), (std::vector<int64_t>{2, 3, 4, 10, 11, 12}));
  EXPECT_EQ(IndexSet::first_n(3).to_string(), "0-2");
  EXPECT_TRUE(IndexSet::parse("")->empty());
}

// Issue #19 (fuzz): "0-9223372036854775807" overflowed size(). Indices are bounded with a clear
// message, and the arithmetic holds at the ends of int64 whatever the set.
TEST(IndexSet, IndicesAboveTheBoundAreAnErrorNotAnOverflow) {
  std::string err;
  size_t off = 99;
  EXPECT_FALSE(IndexSet::parse("3, 0-9223372036854775807", &err, &off));
  EXPECT_EQ(off, 3u);
  EXPECT_NE(err.find("too large"), std::string::npos) << err;
  EXPECT_NE(err.find(std::to_string(IndexSet::kMaxIndex)), std::string::npos) << err;
  EXPECT_FALSE(IndexSet::parse("99999999999999999999999", &err, &off));
  EXPECT_NE(err.find("too large"), std::string::npos) << err;
  EXPECT_FALSE(IndexSet::parse("-4", &err, &off));
  EXPECT_NE(err.find("expected an index"), std::string::npos) << err;
  auto top = IndexSet::parse("0-" + std::to_string(IndexSet::kMaxIndex));
  ASSERT_TRUE(top);
  EXPECT_EQ(top->size(), IndexSet::kMaxIndex + 1);
}

TEST(IndexSet, SizesAndPrefixesHoldAtTheEndsOfInt64) {
  const IndexSet all = IndexSet::first_n(INT64_MAX);  // 0..INT64_MAX-1
  EXPECT_EQ(all.size(), INT64_MAX);
  EXPECT_EQ(all.prefix(INT64_MAX).size(), INT64_MAX);
  EXPECT_EQ(all.prefix(3).to_string(), "0-2");
  const IndexSet ends = IndexSet::from_indices({INT64_MAX, 0, INT64_MAX - 1});
  EXPECT_EQ(ends.size(), 3);
  EXPECT_EQ(ends.prefix(2).to_string(), "0," + std::to_string(INT64_MAX - 1));
  EXPECT_TRUE(ends.contains(INT64_MAX));
}
