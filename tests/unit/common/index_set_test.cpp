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
