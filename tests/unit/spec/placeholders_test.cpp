#include "spec/placeholders.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

TEST(Placeholders, FindsNamesWithOffsets) {
  auto n = placeholder_names("--samples={samples},{steps}");
  ASSERT_TRUE(n);
  ASSERT_EQ(n->size(), 2u);
  EXPECT_EQ((*n)[0].first, "samples");
  EXPECT_EQ((*n)[0].second, 10u);
  EXPECT_EQ((*n)[1].first, "steps");
}

TEST(Placeholders, EscapedBracesAreLiteral) {
  auto n = placeholder_names("{{not}} {x}");
  ASSERT_TRUE(n);
  ASSERT_EQ(n->size(), 1u);
  EXPECT_EQ(substitute_placeholders("{{a}} {x}", {{"x", "1"}}), "{a} 1");
}

TEST(Placeholders, Substitutes) {
  EXPECT_EQ(substitute_placeholders("--s={samples}", {{"samples", "0-3,7"}}), "--s=0-3,7");
  EXPECT_EQ(substitute_placeholders("{unknown}", {}), "{unknown}");
}

TEST(Placeholders, RejectsMalformed) {
  std::string err;
  size_t off = 0;
  EXPECT_FALSE(placeholder_names("abc{steps", &err, &off));
  EXPECT_EQ(off, 3u);
  EXPECT_FALSE(placeholder_names("{}", &err, &off));
}
