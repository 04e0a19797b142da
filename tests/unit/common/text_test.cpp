#include "common/text.hpp"

#include <gtest/gtest.h>

using namespace ddpbisect;

TEST(Text, TrimSplitJoin) {
  EXPECT_EQ(trim("  a b \n"), "a b");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
}

TEST(Text, EditDistanceAndSuggestions) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(closest_match("proc_per_node", {"name", "nodes", "procs_per_node", "device"}),
            "procs_per_node");
  EXPECT_EQ(closest_match("bulitin", {"builtin", "command"}), "builtin");
  EXPECT_EQ(closest_match("zzzzzz", {"builtin", "command"}), "");
}

TEST(Text, ShellQuote) {
  EXPECT_EQ(shell_quote("train.py"), "train.py");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}
